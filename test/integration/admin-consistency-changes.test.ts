// suite: cluster
// Once an admin call has answered, every request that arrives afterwards on the same process
// sees the change; on another process, every request that arrives after the announcement was
// delivered there sees it. No request gets the old definition because another request is
// already reading the new one. Each kind of change (create after a cached TAG_NOT_FOUND, a
// rule's template, disable, enable, delete, token create and revoke) is checked with bursts of
// concurrent requests over the dispenser itself (fired in the same turn, so the old race cannot
// hide), HTTP, UDP and the websocket stream, several times, on one process and across two.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Node } from '../../src/process/serve.js';
import { cleanup, testNames } from '../../tools/env.js';
import { createTag, spawnNode, startLocalNode, type ChildNode } from '../../tools/node.js';
import { freePort } from '../../tools/child.js';
import { admin, assertAll, Burst, type Probe, REPEAT } from '../helpers/admin-burst.js';
import { afterChange } from '../helpers/admin-delivery.js';

interface Change {
  readonly name: string;
  /** Sets up the tag (through the node given) and answers how requests probe it. */
  prepare(url: string, tag: string): Promise<Probe>;
  /** What every probe answers before the change, and after it. */
  readonly before: string;
  readonly after: string;
  /** Makes the change through the node at url. */
  change(url: string, tag: string, p: Probe): Promise<void>;
}

const RULE_T0 = '{yyyy}{counter:6}';
const RULE_T1 = 'N{yyyy}{counter:6}';
const letterOrDigit = (id: string) => (/^\d/.test(id) ? 'digits' : id[0]);
const tokenOf = async (url: string, tag: string) =>
  (await admin(url, 'POST', `/v1/admin/tags/${tag}/tokens`, {})) as { id: number; token: string };

/** A rule of the given order whose template changes: its IDs start with a digit, then with N. */
function templateChange(name: string, order: 'node' | 'global'): Change {
  return {
    name,
    prepare: async (url, tag) => {
      await createTag(url, { tag, mode: 'rule', order, template: RULE_T0, max_counter: 999999 });
      return { tag, app: 'shop', mark: letterOrDigit };
    },
    before: 'OK:digits',
    after: 'OK:N',
    change: async (url, tag) => void (await admin(url, 'PATCH', `/v1/admin/tags/${tag}`, { template: RULE_T1 })),
  };
}

const CHANGES: Change[] = [
  {
    name: 'a segment tag created after a cached TAG_NOT_FOUND',
    prepare: async (_url, tag) => ({ tag }),
    before: 'TAG_NOT_FOUND',
    after: 'OK',
    change: async (url, tag) => void (await createTag(url, { tag, mode: 'segment' })),
  },
  {
    name: 'a rule created after a cached TAG_NOT_FOUND',
    prepare: async (_url, tag) => ({ tag, app: 'shop' }),
    before: 'TAG_NOT_FOUND',
    after: 'OK',
    change: async (url, tag) =>
      void (await createTag(url, { tag, mode: 'rule', template: RULE_T0, max_counter: 999999 })),
  },
  templateChange("a rule's template changed", 'node'),
  // Served from its app counter's coalescer once warm, like an order: node rule from memory.
  templateChange("an order: global rule's template changed", 'global'),
  {
    name: 'an order: node tag disabled',
    prepare: async (url, tag) => {
      await createTag(url, { tag, order: 'node' });
      return { tag };
    },
    before: 'OK',
    after: 'TAG_DISABLED',
    change: async (url, tag) => void (await admin(url, 'PATCH', `/v1/admin/tags/${tag}`, { enabled: false })),
  },
  {
    name: 'a disabled tag enabled',
    prepare: async (url, tag) => {
      await createTag(url, { tag, enabled: false });
      return { tag };
    },
    before: 'TAG_DISABLED',
    after: 'OK',
    change: async (url, tag) => void (await admin(url, 'PATCH', `/v1/admin/tags/${tag}`, { enabled: true })),
  },
  {
    name: 'an order: node tag deleted',
    prepare: async (url, tag) => {
      await createTag(url, { tag, order: 'node' });
      return { tag };
    },
    before: 'OK',
    after: 'TAG_NOT_FOUND',
    change: async (url, tag) => void (await admin(url, 'DELETE', `/v1/admin/tags/${tag}`)),
  },
  {
    name: 'an order: global tag disabled',
    prepare: async (url, tag) => {
      await createTag(url, { tag });
      return { tag };
    },
    before: 'OK',
    after: 'TAG_DISABLED',
    change: async (url, tag) => void (await admin(url, 'PATCH', `/v1/admin/tags/${tag}`, { enabled: false })),
  },
  {
    name: 'a token created for a snowflake tag',
    prepare: async (url, tag) => {
      await createTag(url, { tag, mode: 'snowflake' });
      return { tag };
    },
    before: 'OK',
    // A tag with tokens answers a request without a valid one as a missing tag.
    after: 'TAG_NOT_FOUND',
    change: async (url, tag) => void (await tokenOf(url, tag)),
  },
  {
    name: 'a token revoked (another stays)',
    prepare: async (url, tag) => {
      await createTag(url, { tag, order: 'node' });
      const revoked = await tokenOf(url, tag);
      await tokenOf(url, tag);
      return { tag, token: revoked.token, revokeId: revoked.id } as Probe;
    },
    before: 'OK',
    // A tag with tokens answers a request without a valid one as a missing tag.
    after: 'TAG_NOT_FOUND',
    change: async (url, tag, p) =>
      void (await admin(url, 'DELETE', `/v1/admin/tags/${tag}/tokens/${(p as Probe & { revokeId: number }).revokeId}`)),
  },
];

describe('an admin change is seen by the very next request', () => {
  const names = testNames();
  let b: Node & { url: string };
  let a: ChildNode;

  before(async () => {
    const udpPort = await freePort();
    // Definitions stay cached for a minute: only the change itself can make them be read again.
    b = await startLocalNode(names, { UDP_PORT: String(udpPort), TAG_CACHE_MS: '60000', NODE_ID: 'consistency-b' });
    a = await spawnNode(names, { NODE_ID: 'consistency-a', TAG_CACHE_MS: '60000' });
  });
  after(async () => {
    await b.close();
    const code = await a.stop();
    await cleanup(names);
    assert.equal(code, 0);
  });

  for (const where of ['same', 'other'] as const) {
    for (const [n, c] of CHANGES.entries()) {
      it(`${c.name}, ${where === 'same' ? 'on the process that answered the admin call' : 'on another process, once the announcement is delivered'}`, {
        timeout: 60000,
      }, async () => {
        for (let round = 0; round < REPEAT; round++) {
          const tag = `c${n}${where[0]}${round}`;
          const p = await c.prepare(b.url, tag);
          const burst = await Burst.open(b, p);
          try {
            // Twice: the first reads the definition, the second is served from the cache
            // (and the in-memory blocks) exactly as the change will find it.
            assertAll(await burst.fire(), c.before, `round ${round}, before the change (reading it)`);
            assertAll(await burst.fire(), c.before, `round ${round}, before the change (cached)`);
            const got = await afterChange(where, b, tag, burst, () =>
              c.change(where === 'same' ? b.url : a.url, tag, p),
            );
            assertAll(got, c.after, `round ${round}, after the change`);
            assertAll(await burst.fire(), c.after, `round ${round}, later`);
          } finally {
            burst.close();
          }
        }
      });
    }
  }
});
