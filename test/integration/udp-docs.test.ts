// suite: single — one node's UDP listener against its own documentation
// Every exchange docs/UDP.md shows (a `→` request and its `←` reply, or "(no reply ...)") is
// sent to a node set up as the examples assume (rule o2o, `{year%10}{MM}{dd}{counter:4}` from
// counter 1, in UTC; NODE_OFFSET 1), in the order the page gives them, and must come back byte
// for byte: only the date of an ID is today's instead of the example's.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { freePort, ROOT } from '../../tools/child.js';
import { cleanup, testConfig, testNames } from '../../tools/env.js';
import { createTag } from '../../tools/node.js';
import { startNode, type Node } from '../../src/process/serve.js';
import { UdpClient } from '../../tools/udp-client.js';

interface Exchange {
  readonly request: string;
  /** The reply, or null where the page says none comes. */
  readonly reply: string | null;
}

/** The exchanges of the page's code blocks, in order. */
function exchanges(page: string): Exchange[] {
  const out: Exchange[] = [];
  const lines = page.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i].startsWith('→ ')) continue;
    const next = lines[i + 1] ?? '';
    if (next.startsWith('← ')) out.push({ request: lines[i].slice(2), reply: next.slice(2) });
    else if (/^\s+\(no reply/.test(next)) out.push({ request: lines[i].slice(2), reply: null });
    else assert.fail(`docs/UDP.md: the request "${lines[i]}" is followed by neither a reply nor "(no reply"`);
  }
  return out;
}

/** `{year%10}{MM}{dd}` of today in UTC, as the example rule renders it. */
function today(): string {
  const d = new Date();
  const two = (n: number) => String(n).padStart(2, '0');
  return `${d.getUTCFullYear() % 10}${two(d.getUTCMonth() + 1)}${two(d.getUTCDate())}`;
}

describe('docs/UDP.md', () => {
  const names = testNames();
  let node: Node;
  let c: UdpClient;

  before(async () => {
    node = await startNode(testConfig(names, { UDP_PORT: String(await freePort()), NODE_OFFSET: '1' }));
    await createTag(node.url!, {
      tag: 'o2o',
      mode: 'rule',
      template: '{year%10}{MM}{dd}{counter:4}',
      min_counter: 1,
      max_counter: 9999,
      reset_seconds: 86400,
      time_zone: 'UTC',
    });
    c = await UdpClient.open();
  });
  after(async () => {
    c?.close();
    await node?.close();
    await cleanup(names);
  });

  it('shows exactly what idmint answers', async () => {
    const shown = exchanges(readFileSync(`${ROOT}docs/UDP.md`, 'utf8'));
    assert.ok(shown.length >= 8, `only ${shown.length} exchanges found on the page`);
    let probes = 0;
    for (const { request, reply } of shown) {
      if (reply === null) {
        const marker = `docs-probe-${++probes}`;
        const probe = JSON.stringify({ action: 'get', rule_name: 'nope', app_name: 'probe', seq: marker });
        assert.deepEqual(
          await c.exchangeOrNone(node.udpPort!, request, probe, marker),
          [],
          `the page says "${request}" gets no reply`,
        );
        continue;
      }
      // An ID of the example rule carries the example's date: today's comes back.
      const expected = reply.replace(/"data":"\d{5}(\d{4})"/, (_m, counter: string) => `"data":"${today()}${counter}"`);
      assert.equal(await c.exchange(node.udpPort!, request), expected, `the reply to ${request}`);
    }
  });
});
