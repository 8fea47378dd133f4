// suite: cluster
// Interleaved counters (stride, offset) against real Redis and MySQL: two idmint deployments
// that share nothing (each its own MySQL database and Redis key prefix) serve one tag with
// stride 2 and offsets 0 and 1 under concurrent load on every transport (HTTP single IDs and
// batches, the fast path, the websocket stream in binary and json through the TS client, UDP
// for rules): no ID is issued twice and each deployment's IDs have its parity. Also the ID
// limit in counter space, decoding, the ranges refusal, and re-creation with another stride.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { IdmintClient, IdmintClientError } from '../../src/client/index.js';
import type { Node } from '../../src/process/serve.js';
import { startNode } from '../../src/process/serve.js';
import { cleanup, testConfig, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, fetchIds } from '../../tools/node.js';
import { freePort } from '../../tools/child.js';
import { UdpClient } from '../../tools/udp-client.js';

const STRIDE = 2;
/** Small segments and blocks: many refills and node blocks during the load. */
const SMALL = { step: 40, min_step: 10, max_step: 200, target_seconds: 1 };
const RULE = {
  mode: 'rule',
  template: 'R{counter:7}',
  min_counter: 0,
  max_counter: 9_999_999,
  reset_seconds: 0,
  time_zone: 'UTC',
};

interface Deployment {
  readonly offset: number;
  readonly node: Node;
  readonly url: string;
  readonly client: IdmintClient;
  readonly names: ReturnType<typeof testNames>;
}

async function runPool(n: number, workers: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

async function getId(url: string, tag: string, query = ''): Promise<string> {
  const r = await fetch(`${url}/v1/id/${tag}${query}`);
  const body = (await r.json()) as { id?: string };
  assert.equal(r.status, 200, JSON.stringify(body));
  return body.id!;
}

async function udpGet(c: UdpClient, port: number, rule: string, app: string): Promise<string> {
  const reply = JSON.parse(
    await c.exchange(port, JSON.stringify({ action: 'get', rule_name: rule, app_name: app })),
  ) as { code: number; data: string };
  assert.equal(reply.code, 0, JSON.stringify(reply));
  return reply.data;
}

/** Records every ID against the deployment that issued it; fails on the first repeat. */
class Ledger {
  private readonly seen = new Map<string, number>();
  add(id: string, offset: number, what: string): void {
    const prev = this.seen.get(id);
    if (prev !== undefined)
      assert.fail(`${what}: ID ${id} issued twice (deployments with offset ${prev} and ${offset})`);
    this.seen.set(id, offset);
  }
  get size(): number {
    return this.seen.size;
  }
}

describe('interleaved counters: two independent deployments of one tag', () => {
  const deployments: Deployment[] = [];

  before(async () => {
    for (const offset of [0, 1]) {
      const names = testNames();
      const node = await startNode(testConfig(names, { UDP_PORT: String(await freePort()) }));
      const url = node.url!;
      const inter = { stride: STRIDE, offset };
      await createTag(url, { tag: 'g', ...SMALL, ...inter });
      await createTag(url, { tag: 'n', order: 'node', node_block: 25, ...SMALL, ...inter });
      await createTag(url, { tag: 'sh', layout: 'sharded', shards: 4, app_bits: 4, app_id: 5, ...SMALL, ...inter });
      await createTag(url, { tag: 'r', ...RULE, ...inter });
      await createTag(url, { tag: 'rn', ...RULE, template: 'N{counter:7}', order: 'node', node_block: 20, ...inter });
      deployments.push({ offset, node, url, names, client: new IdmintClient({ url }) });
    }
  });
  after(async () => {
    for (const d of deployments) {
      d.client.close();
      await d.node.close();
      await cleanup(d.names);
    }
  });

  it('segment tags (global, node, sharded): no collision under concurrent load on every transport, each deployment its parity', async () => {
    const ledgers = { g: new Ledger(), n: new Ledger(), sh: new Ledger() };
    const load = async (d: Deployment) => {
      const got: Record<keyof typeof ledgers, string[]> = { g: [], n: [], sh: [] };
      await Promise.all([
        // Single IDs (the fast path serves these for g and n), batches, sharded with keys.
        runPool(300, 16, async (i) => {
          got.g.push(await getId(d.url, 'g'));
          got.n.push(await getId(d.url, 'n'));
          got.sh.push(await getId(d.url, 'sh', `?key=k${i % 7}`));
        }),
        runPool(40, 4, async (i) => {
          for (const tag of ['g', 'n'] as const)
            got[tag].push(...(await fetchIds(d.url, tag, 1 + (i % 50))).map(String));
          got.sh.push(...(await fetchIds(d.url, 'sh', 1 + (i % 50), `&key=b${i % 5}`)).map(String));
        }),
        // The websocket stream through the TS client, binary and json.
        (async () => {
          for (const format of ['binary', 'json'] as const) {
            for (const tag of ['g', 'n'] as const)
              got[tag].push(...(await d.client.take(tag, 3000, { format, block: 700 })).map(String));
            got.sh.push(...(await d.client.take('sh', 2000, { format, key: 'stream' })).map(String));
          }
        })(),
        (async () => {
          let k = 0;
          for await (const id of d.client.stream('g', { prefetch: 500 })) {
            got.g.push(String(id));
            if (++k === 2000) break;
          }
        })(),
      ]);
      return got;
    };
    const results = await Promise.all(deployments.map(load));
    for (const [i, d] of deployments.entries()) {
      for (const tag of ['g', 'n', 'sh'] as const) {
        for (const id of results[i][tag]) {
          // Plain tags: the ID is offset (mod stride). Sharded: its sequence field is.
          const seq = tag === 'sh' ? BigInt(id) >> 6n : BigInt(id);
          if (seq % BigInt(STRIDE) !== BigInt(d.offset))
            assert.fail(`${tag}: ID ${id} of the deployment with offset ${d.offset} has sequence ${seq}`);
          if (tag === 'sh') assert.equal(BigInt(id) & 0xfn, 5n, 'app id in the low bits');
          ledgers[tag].add(id, d.offset, tag);
        }
      }
    }
    assert.ok(ledgers.g.size > 2 * (300 + 6000 + 2000), `only ${ledgers.g.size} IDs of g`);
    assert.ok(ledgers.sh.size > 2 * (300 + 4000));
    // Order holds per deployment for an order-global tag read in sequence.
    for (const d of deployments) {
      const seqIds = [
        await getId(d.url, 'g'),
        ...(await fetchIds(d.url, 'g', 5)).map(String),
        await getId(d.url, 'g'),
      ].map(BigInt);
      for (let i = 1; i < seqIds.length; i++) assert.ok(seqIds[i] > seqIds[i - 1]);
      for (let i = 1; i < 5; i++)
        assert.equal(seqIds[i + 1] - seqIds[i], BigInt(STRIDE), 'a batch within one segment steps by the stride');
    }
  });

  it('rule tags: the counter formatted into the template is offset (mod stride), over HTTP, the stream and UDP', async () => {
    const ledger = new Ledger();
    const udp = await UdpClient.open();
    try {
      const load = async (d: Deployment) => {
        const out: string[] = [];
        const c = await UdpClient.open();
        try {
          await Promise.all([
            runPool(150, 8, async () => {
              out.push(await getId(d.url, 'r', '?app=shop'));
              out.push(await getId(d.url, 'rn', '?app=shop'));
            }),
            (async () => {
              for (let i = 0; i < 150; i++) {
                out.push(await udpGet(c, d.node.udpPort!, 'r', 'shop'));
                out.push(await udpGet(c, d.node.udpPort!, 'rn', 'shop'));
              }
            })(),
            (async () => {
              for (const tag of ['r', 'rn'])
                out.push(...((await d.client.take(tag, 1500, { app: 'shop' })) as unknown as string[]));
              const r = await fetch(`${d.url}/v1/ids/r?count=300&app=shop`);
              out.push(...((await r.json()) as { ids: string[] }).ids);
            })(),
          ]);
        } finally {
          c.close();
        }
        return out;
      };
      const results = await Promise.all(deployments.map(load));
      for (const [i, d] of deployments.entries()) {
        for (const id of results[i]) {
          assert.match(id, /^[RN]\d{7}$/);
          if (Number(id.slice(1)) % STRIDE !== d.offset)
            assert.fail(`rule ID ${id} of the deployment with offset ${d.offset}`);
          ledger.add(id, d.offset, 'rule');
        }
      }
      // monitor shows the last counter handed out, which has the deployment's parity.
      for (const d of deployments) {
        const last = await udpGet(udp, d.node.udpPort!, 'r', 'mon');
        const m = JSON.parse(
          await udp.exchange(d.node.udpPort!, JSON.stringify({ action: 'monitor', rule_name: 'r', app_name: 'mon' })),
        ) as {
          data: { counter: number };
        };
        assert.equal(m.data.counter, Number(last.slice(1)));
        assert.equal(m.data.counter % STRIDE, d.offset);
      }
    } finally {
      udp.close();
    }
  });
});

describe('interleaved counters: limit, decode, formats, re-creation', () => {
  const names = testNames();
  let node: Node;
  let url: string;

  before(async () => {
    node = await startNode(testConfig(names));
    url = node.url!;
  });
  after(async () => {
    await node.close();
    await cleanup(names);
  });

  it('max_id_limit bounds the ID, not the counter: stride 3, offset 2, limit 50 gives 5, 8, ..., 50 and then ID_SPACE_EXHAUSTED', async () => {
    await createTag(url, { tag: 'cap', stride: 3, offset: 2, max_id_limit: 52, step: 4, min_step: 4 });
    const ids = await fetchIds(url, 'cap', 16);
    assert.deepEqual(
      ids,
      Array.from({ length: 16 }, (_, k) => BigInt((k + 1) * 3 + 2)),
    );
    const over = await fetch(`${url}/v1/id/cap`);
    assert.equal(over.status, 409);
    assert.equal(((await over.json()) as { error: { code: string } }).error.code, 'ID_SPACE_EXHAUSTED');
    // Raised to 53 (the next ID): exactly one more.
    const raise = await fetch(`${url}/v1/admin/tags/cap`, {
      method: 'PATCH',
      headers: adminHeaders,
      body: '{"max_id_limit":53}',
    });
    assert.equal(raise.status, 200);
    assert.equal(await getId(url, 'cap'), '53');
    assert.equal((await fetch(`${url}/v1/id/cap`)).status, 409);
    // A limit below what the stride allows at all is refused at creation.
    const bad = await fetch(`${url}/v1/admin/tags`, {
      method: 'POST',
      headers: adminHeaders,
      body: JSON.stringify({ tag: 'none', stride: 10, offset: 9, max_id_limit: 18 }),
    });
    assert.equal(bad.status, 400);
  });

  it("decode shows stride, offset and the counter; an ID of another residue is not the tag's", async () => {
    await createTag(url, { tag: 'dec', stride: 4, offset: 3 });
    await createTag(url, { tag: 'decs', stride: 4, offset: 1, layout: 'sharded', shards: 2, app_bits: 1, app_id: 1 });
    const id = await getId(url, 'dec');
    assert.equal(id, '7');
    const d = (await (await fetch(`${url}/v1/decode/dec/${id}`)).json()) as Record<string, unknown>;
    assert.deepEqual(d, {
      mode: 'segment',
      id: '7',
      seq: '7',
      shard: 0,
      app_id: 0,
      stride: 4,
      offset: 3,
      counter: '1',
    });
    const wrong = await fetch(`${url}/v1/decode/dec/8`);
    assert.equal(wrong.status, 400);
    const sid = await getId(url, 'decs', '?key=x');
    const sd = (await (await fetch(`${url}/v1/decode/decs/${sid}`)).json()) as Record<string, unknown>;
    assert.equal(sd.seq, '5');
    assert.equal(sd.counter, '1');
    assert.equal(sd.app_id, 1);
    // The admin API shows the fields, and refuses to change them.
    const shown = (await (await fetch(`${url}/v1/admin/tags/dec`, { headers: adminHeaders })).json()) as Record<
      string,
      unknown
    >;
    assert.equal(shown.stride, 4);
    assert.equal(shown.offset, 3);
    const patch = await fetch(`${url}/v1/admin/tags/dec`, {
      method: 'PATCH',
      headers: adminHeaders,
      body: '{"offset":1}',
    });
    assert.equal(patch.status, 400);
  });

  it('refuses format "ranges" for an interleaved tag (its IDs are not consecutive), serves binary and json', async () => {
    await createTag(url, { tag: 'wr', stride: 2, offset: 1 });
    const client = new IdmintClient({ url });
    try {
      await assert.rejects(
        client.take('wr', 10, { format: 'ranges' }),
        (e: unknown) =>
          e instanceof IdmintClientError && e.code === 'INVALID_ARGUMENT' && /interleaved/.test(e.message),
      );
      const bin = await client.take('wr', 5, { format: 'binary' });
      const json = await client.take('wr', 5, { format: 'json' });
      assert.deepEqual([...bin, ...json], [3n, 5n, 7n, 9n, 11n, 13n, 15n, 17n, 19n, 21n]);
    } finally {
      client.close();
    }
  });

  it('a tag re-created with another stride and offset continues above every ID the old one issued', async () => {
    await createTag(url, { tag: 'again', stride: 10, offset: 7, step: 50, min_step: 10 });
    const old = await fetchIds(url, 'again', 30);
    assert.equal(old.at(-1), 307n);
    const del = await fetch(`${url}/v1/admin/tags/again`, {
      method: 'DELETE',
      headers: { authorization: adminHeaders.authorization },
    });
    assert.equal(del.status, 204);
    await createTag(url, { tag: 'again', stride: 3, offset: 0 });
    const next = await fetchIds(url, 'again', 5);
    // The old tag had allocated a segment of 50 counters: up to 50 * 10 + 7 = 507.
    assert.ok(next[0] > 507n, `re-created tag issued ${next[0]}`);
    for (const id of next) assert.equal(id % 3n, 0n);
    // A rule keeps its stride and offset across re-creation (its counters restart per scope).
    await createTag(url, { tag: 'rr', ...RULE, stride: 2, offset: 1 });
    assert.equal(
      (
        await fetch(`${url}/v1/admin/tags/rr`, {
          method: 'DELETE',
          headers: { authorization: adminHeaders.authorization },
        })
      ).status,
      204,
    );
    const other = await fetch(`${url}/v1/admin/tags`, {
      method: 'POST',
      headers: adminHeaders,
      body: JSON.stringify({ tag: 'rr', ...RULE, stride: 2, offset: 0 }),
    });
    assert.equal(other.status, 400);
    assert.match(((await other.json()) as { error: { message: string } }).error.message, /stride 2 and offset 1/);
    await createTag(url, { tag: 'rr', ...RULE, stride: 2, offset: 1 });
  });
});
