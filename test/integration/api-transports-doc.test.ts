// suite: cluster
// docs/API.md's table of transports (between `transports:begin` and `transports:end`) held to
// the code: every row names a transport this test knows how to try, and every transport it
// knows is in the table; each row's claims (a permuted tag served, refused or decoded only for
// staff; an idempotency key kept or refused, a `ranges` take refused, a refusal naming the
// header) are tried against a running node, and a claim the node does not bear out fails.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import WebSocket from 'ws';
import { freePort } from '../../tools/child.js';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { IdsClient } from '../../tools/grpc-client.js';
import { createTag, startLocalNode } from '../../tools/node.js';
import { UdpClient } from '../../tools/udp-client.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

/** What one try of a transport gave: IDs, or a refusal and its message. */
type Outcome = { ok: true; ids: string[] } | { ok: false; message: string };

/** How to try one transport: for a tag, with an idempotency key or none, in the `ranges` format or not. */
interface Probe {
  /** One request for the tag; undefined when the transport answers no IDs (decoding). */
  readonly take?: (tag: string, key?: string, ranges?: boolean) => Promise<Outcome>;
  /** The tag a keyed request is tried on (a plain tag the transport serves). */
  readonly keyTag?: string;
  /** Decodes an ID of the tag, with the admin token or none (decoding transports only). */
  readonly decode?: (tag: string, id: string, staff: boolean) => Promise<Outcome>;
}

const DOC = readFileSync(new URL('../../docs/API.md', import.meta.url), 'utf8');

/** The table's rows: transport, permuted tags, idempotency keys. */
function tableRows(): string[][] {
  const m = /<!-- transports:begin -->\n([\s\S]*?)<!-- transports:end -->/.exec(DOC);
  assert.ok(m, 'docs/API.md has the transports table between its markers');
  return m[1]
    .trim()
    .split('\n')
    .slice(2)
    .map((line) =>
      line
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim()),
    );
}

const word = (cell: string) => cell.split(/[\s(,]/)[0];

/** The outcome of a try, or a failure naming the transport when it does not come within 10 s. */
async function within<T>(what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within 10 s`)), 10_000)),
  );
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe('docs/API.md: the transports of permuted tags and idempotency keys', () => {
  const names = testNames();
  let node: LocalNode;
  let grpc: IdsClient;
  let udp: UdpClient;
  const probes = new Map<string, Probe>();

  before(async () => {
    node = await startLocalNode(names, { UDP_PORT: String(await freePort()), GRPC_PORT: String(await freePort()) });
    grpc = new IdsClient(node.grpcPort!);
    udp = await UdpClient.open();
    await createTag(node.url, { tag: 'perm', permute: { digits: 6 } });
    await createTag(node.url, { tag: 'pnode', order: 'node', permute: { digits: 6 } });
    await createTag(node.url, { tag: 'plain' });
    await createTag(node.url, { tag: 'tnode', order: 'node' });
    await createTag(node.url, { tag: 'flake', mode: 'snowflake' });
    const url = node.url;

    const http = async (path: string, key?: string, headers: Record<string, string> = {}): Promise<Outcome> => {
      const res = await fetch(`${url}${path}`, { headers: { ...headers, ...(key ? { 'idempotency-key': key } : {}) } });
      const text = await res.text();
      if (res.status !== 200) return { ok: false, message: text };
      if (res.headers.get('content-type')?.startsWith('text/plain')) return { ok: true, ids: [text] };
      const body = JSON.parse(text) as { id?: string; ids?: string[] };
      return { ok: true, ids: body.ids ?? [String(body.id)] };
    };
    const tinyid = async (route: string, tag: string, key?: string): Promise<Outcome> => {
      const res = await fetch(`${url}/tinyid/id/${route}?bizType=${tag}`, {
        headers: key ? { 'idempotency-key': key } : {},
      });
      const body = (await res.json()) as { code: number; message: string; data: unknown };
      return body.code === 200 ? { ok: true, ids: [JSON.stringify(body.data)] } : { ok: false, message: body.message };
    };
    const grpcCall = async (p: Promise<string[]>): Promise<Outcome> =>
      p.then(
        (ids) => ({ ok: true, ids }),
        (e: Error) => ({ ok: false, message: e.message }),
      );
    const ws = async (tag: string, key?: string, ranges?: boolean): Promise<Outcome> => {
      const sock = new WebSocket(`${url.replace('http', 'ws')}/v1/stream`);
      await new Promise((r, j) => {
        sock.once('open', r);
        sock.once('error', j);
      });
      const ids: string[] = [];
      const out = new Promise<Outcome>((resolve) =>
        sock.on('message', (m: Buffer) => {
          const f = JSON.parse(m.toString()) as { op: string; ids?: string[]; ranges?: string[][]; message?: string };
          if (f.op === 'block') ids.push(...(f.ids ?? (f.ranges ?? []).flat()));
          if (f.op === 'done') resolve({ ok: true, ids });
          if (f.op === 'error') resolve({ ok: false, message: String(f.message) });
        }),
      );
      sock.send(
        JSON.stringify({
          op: 'take',
          req: 1,
          tag,
          count: 2,
          format: ranges ? 'ranges' : 'json',
          ...(key ? { idempotency_key: key } : {}),
        }),
      );
      const got = await out;
      sock.close();
      return got;
    };
    probes.set('HTTP `GET /v1/id/:tag`', { take: (t, k) => http(`/v1/id/${t}`, k), keyTag: 'plain' });
    probes.set('HTTP `GET /v1/ids/:tag`', { take: (t, k) => http(`/v1/ids/${t}?count=2`, k), keyTag: 'plain' });
    probes.set('Leaf `GET /api/segment/get/:tag`', {
      take: (t, k) => http(`/api/segment/get/${t}`, k),
      keyTag: 'plain',
    });
    probes.set('Leaf `GET /api/snowflake/get/:tag`', {
      take: (t, k) => http(`/api/snowflake/get/${t}`, k),
      keyTag: 'flake',
    });
    probes.set('Tinyid `nextId`', { take: (t, k) => tinyid('nextId', t, k), keyTag: 'plain' });
    probes.set('Tinyid `nextSegmentId`', {
      take: (t, k) => tinyid('nextSegmentId', t === 'perm' ? 'pnode' : t, k),
      keyTag: 'tnode',
    });
    probes.set('gRPC `Next`', {
      take: (t, k) => grpcCall(grpc.next({ tag: t, count: 2, ...(k ? { idempotency_key: k } : {}) })),
      keyTag: 'plain',
    });
    probes.set('gRPC `Take`', {
      take: async (t, k, ranges) => {
        const r = await grpc.take(
          { tag: t, count: '2', ranges: ranges === true },
          IdsClient.md(k ? { 'idempotency-key': k } : {}),
        );
        if (r.error) return { ok: false, message: r.error.message };
        return { ok: true, ids: r.blocks.flatMap((b) => [...b.ids, ...b.ranges.flatMap((x) => [x.first, x.last])]) };
      },
      keyTag: 'plain',
    });
    probes.set('websocket take', { take: ws, keyTag: 'plain' });
    probes.set('UDP `get`', {
      take: async (t, k) => {
        const r = JSON.parse(
          await udp.exchange(
            node.udpPort!,
            JSON.stringify({ action: 'get', rule_name: t, app_name: 'x', ...(k ? { idempotency_key: k } : {}) }),
          ),
        ) as {
          code: number;
          data?: string;
          message: string;
        };
        return r.code === 0 ? { ok: true, ids: [String(r.data)] } : { ok: false, message: r.message };
      },
      keyTag: 'plain',
    });
    probes.set('HTTP `GET /v1/decode/:tag/:id`', {
      decode: (t, id, staff) =>
        http(`/v1/decode/${t}/${id}`, undefined, staff ? { authorization: `Bearer ${ADMIN_TOKEN}` } : {}),
    });
    probes.set('gRPC `Decode`', {
      decode: (t, id, staff) =>
        grpc.decode({ tag: t, id }, IdsClient.md(staff ? { authorization: `Bearer ${ADMIN_TOKEN}` } : {})).then(
          (d) => ({ ok: true, ids: [JSON.stringify(d)] }),
          (e: Error) => ({ ok: false, message: e.message }),
        ),
    });
  });
  after(async () => {
    grpc?.close();
    udp?.close();
    await node?.close();
    await cleanup(names);
  });

  it('lists every transport this test tries, and no other', () => {
    assert.deepEqual(
      tableRows()
        .map((r) => r[0])
        .sort(),
      [...probes.keys()].sort(),
    );
  });

  it('says what each transport does with a permuted tag', async () => {
    const [permId] = ((await (await fetch(`${node.url}/v1/ids/perm?count=1`)).json()) as { ids: string[] }).ids;
    for (const [transport, cell] of tableRows().map((r) => [r[0], r[1]])) {
      const p = probes.get(transport)!;
      const claim = word(cell);
      if (claim === 'decoded') {
        assert.ok(p.decode, `${transport}: decodes`);
        assert.equal(
          (await within(transport, p.decode('perm', permId, true))).ok,
          true,
          `${transport}: decodes for the admin token`,
        );
        assert.equal(
          (await within(transport, p.decode('perm', permId, false))).ok,
          false,
          `${transport}: refuses to decode without it`,
        );
        continue;
      }
      assert.ok(p.take, `${transport} answers no IDs: the table says "${cell}"`);
      const got = await within(transport, p.take('perm'));
      assert.equal(
        got.ok ? 'served' : 'refused',
        claim,
        `${transport}: the table says "${cell}", the node ${got.ok ? 'served' : `refused: ${got.ok || got.message}`}`,
      );
      if (cell.includes('`ranges` refused'))
        assert.equal(
          (await within(transport, p.take('perm', undefined, true))).ok,
          false,
          `${transport}: a ranges take of a permuted tag`,
        );
    }
  });

  it('says what each transport does with an idempotency key', async () => {
    let n = 0;
    for (const [transport, cell] of tableRows().map((r) => [r[0], r[2]])) {
      const p = probes.get(transport)!;
      const claim = word(cell);
      if (claim === '—') {
        assert.equal(p.take, undefined, `${transport} answers IDs: the table must say what it does with a key`);
        continue;
      }
      const key = `doc-${n++}`;
      const first = await within(transport, p.take!(p.keyTag!, key));
      const again = await within(transport, p.take!(p.keyTag!, key));
      const did = !first.ok
        ? 'refused'
        : again.ok && JSON.stringify(again.ids) === JSON.stringify(first.ids)
          ? 'kept'
          : 'ignored';
      assert.equal(did, claim, `${transport}: the table says "${cell}", the node ${did} the key`);
      if (!first.ok && cell.includes('naming the header'))
        assert.match(first.message, /Idempotency-Key/, `${transport}: the refusal names the header`);
    }
  });
});
