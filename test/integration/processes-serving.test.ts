// suite: single — the process management of serve --processes
// `idmint serve --processes 2`: the serving processes share the HTTP, UDP and gRPC ports and each
// is a node of its own (node id, worker-id lease, node_offset); IDs stay unique across them;
// /metrics speaks for all of them; a killed process is replaced while the other keeps serving;
// SIGTERM to the primary shuts them all down cleanly.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { get } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { PRESETS, decode } from '../../src/core/snowflake-layout.js';
import { SERVE_NODE_FLAGS } from '../../src/process/node-flags.js';
import { adminHeaders, createTag } from '../../tools/node.js';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { freePort } from '../../tools/child.js';
import { UdpClient } from '../../tools/udp-client.js';
import { IdsClient } from '../../tools/grpc-client.js';
import { type Primary, startPrimary } from '../helpers/serve-primary.js';

const EXIT_WITHIN_MS = 15_000;

/** GET over a connection of its own (no keep-alive), so that each request is handed anew to one of the processes. */
function getFresh(url: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = get(
      url + path,
      { agent: false, headers: { connection: 'close', authorization: `Bearer ${ADMIN_TOKEN}` } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error(`GET ${path}: no answer in 10 s`)));
  });
}

async function nodeIdsServing(url: string, requests: number): Promise<string[]> {
  const seen = new Set<string>();
  for (let i = 0; i < requests; i++) {
    const r = await getFresh(url, '/healthz');
    assert.equal(r.status, 200, r.body);
    seen.add((JSON.parse(r.body) as { node: string }).node);
  }
  return [...seen].sort();
}

/** `clients` loops, each sending `each` requests on fresh connections; every answer must be a 200. */
async function takeConcurrently(
  url: string,
  paths: string[],
  clients: number,
  each: number,
): Promise<Map<string, bigint[]>> {
  const byPath = new Map<string, bigint[]>(paths.map((p) => [p, []]));
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (let i = 0; i < each; i++) {
        const path = paths[(c + i) % paths.length];
        const r = await getFresh(url, path);
        assert.equal(r.status, 200, `${path}: ${r.body}`);
        const body = JSON.parse(r.body) as { id?: string; ids?: string[] };
        byPath.get(path)!.push(...(body.ids ?? [body.id!]).map(BigInt));
      }
    }),
  );
  return byPath;
}

function assertUnique(ids: bigint[], what: string): void {
  assert.equal(
    new Set(ids).size,
    ids.length,
    `${what}: ${ids.length - new Set(ids).size} of ${ids.length} IDs repeated`,
  );
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('serve --processes 2', () => {
  const names = testNames();
  const base = `pt-${randomBytes(3).toString('hex')}`;
  let primary: Primary;
  let url = '';
  let udpPort = 0;
  let grpcPort = 0;
  const globalIds: bigint[] = [];

  const readyPids = () =>
    primary
      .logs()
      .filter((l) => l.msg === 'serving process ready')
      .map((l) => ({ index: l.index as number, pid: l.pid as number }));

  before(async () => {
    udpPort = await freePort();
    grpcPort = await freePort();
    primary = startPrimary(names, 2, {
      NODE_ID: base,
      NODE_OFFSET: '10',
      UDP_PORT: String(udpPort),
      GRPC_PORT: String(grpcPort),
    });
    const ready = await primary.waitForLog(
      (l) => l.msg === 'all serving processes ready',
      30_000,
      'both processes ready',
    );
    url = ready.address as string;
    await createTag(url, { tag: 'pg', step: 200, min_step: 100 });
    await createTag(url, { tag: 'pn', order: 'node', node_block: 50, step: 200, min_step: 100 });
    await createTag(url, { tag: 'ps', mode: 'snowflake' });
    await createTag(url, {
      tag: 'o2o',
      mode: 'rule',
      template: '{year%10}{MM}{dd}{counter:4}',
      min_counter: 0,
      max_counter: 9999,
      reset_seconds: 86400,
      time_zone: 'UTC',
    });
  });

  after(async () => {
    if (primary && primary.proc.exitCode === null) {
      primary.proc.kill('SIGKILL');
      await primary.exited;
      for (const { pid } of readyPids()) if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
    await cleanup(names);
  });

  it('runs two nodes behind one HTTP port and one UDP port, each with its own node id and node_offset', async (t) => {
    assert.deepEqual(await nodeIdsServing(url, 12), [`${base}-0`, `${base}-1`]);
    const pids = readyPids();
    assert.equal(new Set(pids.map((p) => p.pid)).size, 2);
    assert.ok(!pids.some((p) => p.pid === primary.proc.pid), 'the primary serves nothing itself');
    // The primary was started without the serving node flags: its workers run with them.
    const argv = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    for (const flag of SERVE_NODE_FLAGS) {
      assert.ok(!argv(primary.proc.pid!).includes(flag), `the primary was started without ${flag}`);
      for (const { pid } of pids) assert.ok(argv(pid).includes(flag), `serving process ${pid} runs with ${flag}`);
    }

    const udp = await UdpClient.open();
    try {
      const offsets = new Set<number>();
      for (let i = 0; i < 40; i++) {
        const reply = await udp.request(udpPort, { action: 'monitor', rule_name: 'o2o', app_name: 'test' });
        assert.equal(reply.code, 0, JSON.stringify(reply));
        offsets.add((reply.data as { node_offset: number }).node_offset);
      }
      t.diagnostic(`node_offset in monitor replies: ${[...offsets].sort().join(', ')}`);
      for (const o of offsets) assert.ok(o === 10 || o === 11, `node_offset ${o} is neither 10 nor 11`);
    } finally {
      udp.close();
    }
  });

  it('serves gRPC from both processes on one GRPC_PORT (one connection stays with one process)', async () => {
    const workers = new Set<number>();
    const ids: string[] = [];
    // A channel is one HTTP/2 connection: each new one goes to the next process in turn.
    for (let i = 0; i < 8; i++) {
      const client = new IdsClient(grpcPort);
      try {
        const got = await client.next({ tag: 'ps', count: 3 });
        ids.push(...got);
        for (const id of got) {
          const sf = (await client.decode({ tag: 'ps', id })).snowflake;
          assert.ok(sf, `${id} decodes to snowflake parts`);
          workers.add(sf.worker_id);
        }
      } finally {
        client.close();
      }
    }
    assert.equal(new Set(ids).size, ids.length);
    assert.equal(workers.size, 2, `snowflake worker ids seen over gRPC: ${[...workers].join(', ')}`);
  });

  it('hands out unique IDs to concurrent requests, from both processes', async () => {
    const paths = [
      '/v1/id/pg',
      '/v1/ids/pg?count=7',
      '/v1/id/pn',
      '/v1/ids/pn?count=5',
      '/v1/id/ps',
      '/v1/ids/ps?count=3',
    ];
    const got = await takeConcurrently(url, paths, 16, 30);
    const g = [...got.get('/v1/id/pg')!, ...got.get('/v1/ids/pg?count=7')!];
    const n = [...got.get('/v1/id/pn')!, ...got.get('/v1/ids/pn?count=5')!];
    const s = [...got.get('/v1/id/ps')!, ...got.get('/v1/ids/ps?count=3')!];
    assertUnique(g, 'order global');
    assertUnique(n, 'order node');
    assertUnique(s, 'snowflake');
    assert.ok(g.length >= 600 && n.length >= 400 && s.length >= 200, `${g.length}, ${n.length}, ${s.length} IDs`);
    globalIds.push(...g);

    // Snowflake IDs carry the worker id of the process that made them: both processes issued
    // some, each under a lease the pool shows with its own node id as the owner.
    const issuedBy = new Set(s.map((id) => decode(PRESETS.snowflake, id).workerId));
    const res = await fetch(`${url}/v1/admin/workers`, { headers: adminHeaders });
    const pool = (await res.json()) as {
      spaces: { worker_bits: number; leases: { worker_id: number; owner: string }[] }[];
    };
    const leases = pool.spaces.find((sp) => sp.worker_bits === PRESETS.snowflake.workerBits)?.leases ?? [];
    const owners = new Map(leases.map((l) => [l.worker_id, l.owner]));
    assert.deepEqual(
      [...issuedBy].map((w) => owners.get(w)).sort(),
      [`${base}-0`, `${base}-1`],
      `worker ids ${[...issuedBy]} in the IDs; leases ${JSON.stringify(leases)}`,
    );
  });

  it('answers /metrics for all processes, whichever one a scrape reaches', async () => {
    const view = await fetch(`${url}/v1/admin/tags/pg`, { headers: adminHeaders });
    const remaining = ((await view.json()) as { capacity: { remaining_ids: number } }).capacity.remaining_ids;
    assert.ok(remaining > 0);
    const value = (text: string, series: string) =>
      Number(
        text
          .split('\n')
          .find((l) => l.startsWith(`${series} `))
          ?.slice(series.length + 1),
      );
    for (let i = 0; i < 8; i++) {
      const r = await getFresh(url, '/metrics');
      assert.equal(r.status, 200, r.body.slice(0, 300));
      // Both processes hold a snowflake lease (the test before issued from each): a scrape of
      // one process alone would say 1.
      assert.equal(value(r.body, 'idmint_lease_valid{worker_bits="10"}'), 2, 'valid leases of both processes');
      // And it counts the IDs both handed out, not the share of the one asked.
      assert.equal(value(r.body, 'idmint_ids_issued_total{tag="pg",mode="segment"}'), globalIds.length);
      // Shared state (Redis, MySQL) is reported once, not summed over the processes.
      assert.equal(
        value(r.body, 'idmint_tag_remaining_ids{tag="pg"}'),
        remaining,
        'IDs left as the admin API says, not twice',
      );
      assert.equal(value(r.body, 'idmint_worker_ids_total{worker_bits="10"}'), 1024);
      assert.equal(value(r.body, 'idmint_ready'), 1, 'ready: 1 when every process is, not their sum');
    }
  });

  it('replaces a process killed with SIGKILL while the other keeps serving', async () => {
    const victim = readyPids().find((p) => p.index === 1)!;
    process.kill(victim.pid, 'SIGKILL');
    await primary.waitForLog(
      (l) =>
        l.msg === 'serving process exited unexpectedly; replacing it' && l.pid === victim.pid && l.signal === 'SIGKILL',
      5000,
      'the exit of the killed process',
    );
    // Until the replacement serves, the other process answers every request.
    const during = await takeConcurrently(url, ['/v1/id/pg', '/v1/ids/pg?count=10'], 8, 10);
    globalIds.push(...during.get('/v1/id/pg')!, ...during.get('/v1/ids/pg?count=10')!);
    const replaced = await primary.waitForLog(
      (l) => l.msg === 'serving process ready' && l.index === 1 && l.pid !== victim.pid,
      15_000,
      'a replacement for process 1',
    );
    assert.ok(!alive(victim.pid));
    assert.equal(replaced.nodeId, `${base}-1`);
    assert.deepEqual(await nodeIdsServing(url, 12), [`${base}-0`, `${base}-1`]);
    const later = await takeConcurrently(url, ['/v1/id/pg', '/v1/ids/pg?count=10'], 8, 10);
    globalIds.push(...later.get('/v1/id/pg')!, ...later.get('/v1/ids/pg?count=10')!);
    assertUnique(globalIds, 'order global, before, during and after the replacement');
  });

  it('shuts every process down cleanly on SIGTERM to the primary', async () => {
    const current = new Map(readyPids().map((p) => [p.index, p.pid]));
    const pids = [...current.values()];
    assert.equal(pids.length, 2);
    assert.ok(pids.every(alive), 'both current processes run');
    const t0 = Date.now();
    primary.proc.kill('SIGTERM');
    const timer = setTimeout(() => primary.proc.kill('SIGKILL'), EXIT_WITHIN_MS);
    const code = await primary.exited;
    clearTimeout(timer);
    assert.equal(code, 0, primary.output.slice(-20).join('\n'));
    assert.ok(Date.now() - t0 < EXIT_WITHIN_MS);
    const finished = primary
      .logs()
      .filter((l) => l.msg === 'serving process finished')
      .map((l) => l.index)
      .sort();
    assert.deepEqual(finished, [0, 1]);
    // Each process shut down in order: it released its worker-id lease.
    assert.equal(
      primary.logs().filter((l) => l.msg === 'worker-id lease released').length >= 2,
      true,
      'both leases released',
    );
    assert.deepEqual(pids.filter(alive), []);
  });
});
