// suite: cluster
// Worker-id leases of snowflake tags across processes against real Redis and MySQL, with a
// short lease TTL: processes hold distinct worker ids and never issue the same ID; a renewal
// that finds the id taken switches ids; a killed process's id returns to the pool within the
// TTL and its next holder issues above it; a graceful shutdown gives the id back at once with
// its exact last timestamp.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Keys } from '../../src/store/redis/keys.js';
import { cleanup, testNames, testRedis } from '../../tools/env.js';
import { createTag, fetchIds, spawnNode, type ChildNode } from '../../tools/node.js';
import { assertIncreasing } from '../../tools/order.js';
import { waitFor } from '../helpers/fault-load.js';
import {
  assertNoDuplicates,
  LEASE_ENV,
  loop,
  msOf,
  okIds,
  ownWorker,
  type Rec,
  SMALL,
  spaceOf,
  stopOrKill,
  TTL,
  workerOf,
  workers,
} from '../helpers/snowflake-lease-load.js';

describe('worker-id leases across processes', () => {
  const names = testNames();
  const redis = testRedis();
  const keys = new Keys(names.prefix);
  const nodes: ChildNode[] = [];
  const byName = new Map<string, ChildNode>();
  /** Every ID any process of this suite returned, for the cross-test duplicate check. */
  const all: bigint[] = [];

  before(async () => {
    const started = await Promise.all(
      ['sf-n0', 'sf-n1', 'sf-n2'].map((id) => spawnNode(names, { NODE_ID: id, ...LEASE_ENV })),
    );
    started.forEach((n, i) => {
      nodes.push(n);
      byName.set(`sf-n${i}`, n);
    });
    await createTag(nodes[0].url, { tag: 'evt', mode: 'snowflake' });
    await createTag(nodes[0].url, { tag: 'small', mode: 'snowflake', worker_bits: 2 });
    // First leases one process after the other (each takes its leases on its first request).
    for (const n of nodes) {
      for (const id of await fetchIds(n.url, 'evt', 1)) all.push(id);
      for (const id of await fetchIds(n.url, 'small', 1)) all.push(id);
    }
  });

  after(async () => {
    for (const n of nodes) await stopOrKill(n).catch(() => undefined);
    redis.disconnect();
    await cleanup(names);
  });

  it('gives three processes three distinct worker ids; 100k IDs from them together are unique and increase per process', {
    timeout: 40000,
  }, async (t) => {
    const w = await workers(nodes[0].url);
    const space = spaceOf(w, 10);
    assert.ok(space, 'no 10-bit worker space');
    assert.equal(space.size, 1024);
    assert.equal(space.used, 3);
    assert.equal(space.free, 1021);
    assert.deepEqual(space.leases.map((l) => l.owner).sort(), ['sf-n0', 'sf-n1', 'sf-n2']);
    const holder = new Map(space.leases.map((l) => [l.owner, l.worker_id]));
    assert.equal(new Set(holder.values()).size, 3, `worker ids ${JSON.stringify([...holder])}`);
    for (const l of space.leases) {
      assert.match(l.addr, /^127\.0\.0\.1:\d+$/);
      assert.ok(l.expires_in_ms > 0 && l.expires_in_ms <= TTL);
      assert.ok(Date.parse(l.last_timestamp) > Date.now(), 'last timestamp is the holder horizon, ahead of now');
    }
    // Each process knows its own lease and agrees with Redis.
    for (const [name, n] of byName) assert.equal(ownWorker(await workers(n.url), 10), holder.get(name), name);

    // Two sequential clients per process, all six at once.
    const PER_REQUEST = 2500;
    const REQUESTS = 7;
    const loops = [...byName].flatMap(([name, n]) => [0, 1].map(() => ({ name, url: n.url, ids: [] as bigint[] })));
    const started = Date.now();
    await Promise.all(
      loops.map(async (l) => {
        for (let i = 0; i < REQUESTS; i++) {
          const ids = await fetchIds(l.url, 'evt', PER_REQUEST);
          assert.equal(ids.length, PER_REQUEST);
          l.ids.push(...ids);
        }
      }),
    );
    const ids = loops.flatMap((l) => l.ids);
    t.diagnostic(`${ids.length} IDs from 3 processes in ${Date.now() - started} ms`);
    assert.equal(ids.length, 6 * REQUESTS * PER_REQUEST);
    assert.ok(ids.length >= 100_000);
    assertNoDuplicates([...all, ...ids], 'all processes');
    for (const id of ids) all.push(id);
    for (const l of loops) {
      assertIncreasing(l.ids, l.name);
      const want = holder.get(l.name);
      const other = l.ids.find((id) => workerOf(id) !== want);
      assert.equal(
        other,
        undefined,
        `${l.name} issued ${other} with worker ${other === undefined ? '' : workerOf(other)}, holds ${want}`,
      );
    }
    // A process's two clients interleave in time, and together they still never overlap.
    for (const name of byName.keys()) {
      const mine = loops.filter((l) => l.name === name).flatMap((l) => l.ids);
      assert.equal(new Set(mine).size, 2 * REQUESTS * PER_REQUEST, name);
    }
    // The API decodes the same worker id (another process decodes it).
    const sample = loops[0].ids[1234];
    const d = (await (await fetch(`${nodes[2].url}/v1/decode/evt/${sample}`)).json()) as {
      worker_id: number;
      timestamp: string;
    };
    assert.equal(d.worker_id, holder.get(loops[0].name));
    assert.equal(Date.parse(d.timestamp), msOf(sample));
  });

  it('switches worker ids when a renewal finds its id taken by another owner', { timeout: 20000 }, async () => {
    const n = byName.get('sf-n2')!;
    const old = ownWorker(await workers(n.url), 10)!;
    assert.notEqual(old, undefined);
    const mine: bigint[] = await fetchIds(n.url, 'evt', 500);
    const key = `${keys.workerSpace(10)}w:${old}`;
    assert.match((await redis.get(key)) ?? '', /^sf-n2 127\.0\.0\.1:\d+$/, 'the lease key holds this process');
    const intruder = 'intruder 10.9.8.7:1';
    assert.equal(await redis.set(key, intruder, 'PX', 60000, 'XX'), 'OK');
    const at = Date.now();

    // The process keeps serving while it finds out at its next renewal (every TTL/3).
    const switched = await waitFor(
      'the process to switch worker ids',
      async () => {
        mine.push(...(await fetchIds(n.url, 'evt', 100)));
        const w = await workers(n.url);
        const now = ownWorker(w, 10);
        return now !== undefined && now !== old ? { id: now, w } : undefined;
      },
      TTL,
    );
    const tookMs = Date.now() - at;
    assert.ok(tookMs <= TTL / 3 + 1000, `switched ${tookMs} ms after the id was taken`);
    assert.ok(switched.w.this_node.lease_events.lost >= 1);
    assert.ok(
      n.output.some((l) => l.includes('worker id is held by another node; switching ids')),
      'no log line about the switch',
    );

    const afterSwitch = await fetchIds(n.url, 'evt', 2000);
    mine.push(...afterSwitch);
    assert.ok(
      afterSwitch.every((id) => workerOf(id) === switched.id),
      'issued with a worker id other than its new one',
    );
    assert.equal(await redis.get(key), intruder, 'the process took the id back from its new owner');
    const space = spaceOf(await workers(nodes[0].url), 10)!;
    assert.equal(space.leases.find((l) => l.worker_id === switched.id)?.owner, 'sf-n2');
    assert.equal(space.leases.find((l) => l.worker_id === old)?.owner, 'intruder');
    assert.equal(new Set(space.leases.map((l) => l.worker_id)).size, space.leases.length);

    assertIncreasing(mine, 'sf-n2 across the switch');
    assertNoDuplicates([...all, ...mine], 'all processes');
    for (const id of mine) all.push(id);
    await redis.del(key);
  });

  it("returns a killed process's worker id within the TTL; the next holder issues above the dead one", {
    timeout: 40000,
  }, async () => {
    const victim = byName.get('sf-n0')!;
    const watcher = byName.get('sf-n1')!;
    // Fill the 4-id pool so the next process must take the victim's id.
    const space2 = spaceOf(await workers(watcher.url), 2)!;
    assert.equal(space2.size, 4);
    assert.equal(space2.used, 3);
    const held = new Set(space2.leases.map((l) => l.worker_id));
    const spare = [0, 1, 2, 3].find((i) => !held.has(i))!;
    await redis.set(`${keys.workerSpace(2)}w:${spare}`, 'placeholder 10.9.8.7:2', 'PX', 120000, 'NX');
    const dead = space2.leases.find((l) => l.owner === 'sf-n0')!.worker_id;

    // The victim serves up to the moment it is killed.
    const recs: Rec[] = [];
    let stop = false;
    const load = loop(victim.url, 'small', 200, recs, () => stop);
    await sleep(500);
    await victim.kill();
    const killedAt = Date.now();
    stop = true;
    await load;
    nodes.splice(nodes.indexOf(victim), 1);
    const victimIds = okIds(recs);
    assert.ok(victimIds.length >= 1000, `the victim issued only ${victimIds.length} IDs before the kill`);
    assert.ok(victimIds.every((id) => workerOf(id, SMALL) === dead));
    assertNoDuplicates([...all, ...victimIds], 'all processes');
    for (const id of victimIds) all.push(id);

    // The id stays leased until its TTL lapses, then is free: nobody released it.
    const polls: { at: number; leased: boolean }[] = [];
    await waitFor(
      "the killed process's id to be free",
      async () => {
        const s = spaceOf(await workers(watcher.url), 2)!;
        const leased = s.leases.some((l) => l.worker_id === dead);
        polls.push({ at: Date.now(), leased });
        return !leased;
      },
      TTL + 2000,
      100,
    );
    const freedAfter = polls[polls.length - 1].at - killedAt;
    assert.ok(polls[0].leased, 'the id was free at once: it should live until its TTL lapses');
    assert.ok(freedAfter <= TTL + 300, `freed ${freedAfter} ms after the kill (TTL ${TTL})`);
    const horizon = Number(await redis.get(`${keys.workerSpace(2)}last:${dead}`));
    assert.ok(
      horizon > msOf(victimIds[victimIds.length - 1], SMALL),
      "the recorded horizon is above the dead process's last ID",
    );

    // A new process takes the only free id: the dead one's.
    const next = await spawnNode(names, { NODE_ID: 'sf-n3', ...LEASE_ENV });
    nodes.push(next);
    byName.set('sf-n3', next);
    const own = await workers(next.url);
    assert.equal(ownWorker(own, 2), dead, 'the new process did not take the freed id');
    assert.ok(
      Date.parse(own.this_node.leases.find((l) => l.worker_bits === 2)!.floor) >= horizon,
      "its floor is below the dead holder's horizon",
    );
    const fresh = (await fetchIds(next.url, 'small', 1000)).concat(await fetchIds(next.url, 'small', 1000));
    assert.ok(fresh.every((id) => workerOf(id, SMALL) === dead));
    const victimMax = victimIds.reduce((a, b) => (b > a ? b : a));
    assert.ok(fresh[0] > victimMax, `the new holder issued ${fresh[0]}, not above the dead one's ${victimMax}`);
    assert.ok(msOf(fresh[0], SMALL) > horizon, "issued at or before the dead holder's horizon");
    assertIncreasing(fresh, 'sf-n3');
    assertNoDuplicates([...all, ...fresh], 'all processes');
    for (const id of fresh) all.push(id);
  });

  it('releases the lease on graceful shutdown: the id is free at once and its exact last timestamp recorded', {
    timeout: 20000,
  }, async () => {
    const n = byName.get('sf-n1')!;
    const id = ownWorker(await workers(n.url), 10)!;
    const ids = await fetchIds(n.url, 'evt', 3000);
    assertNoDuplicates([...all, ...ids], 'all processes');
    for (const id of ids) all.push(id);
    const lastKey = `${keys.workerSpace(10)}last:${id}`;
    const horizon = Number(await redis.get(lastKey));
    assert.ok(horizon > Date.now(), 'while held, the last timestamp is the holder horizon, ahead of now');
    assert.equal(await redis.exists(`${keys.workerSpace(10)}w:${id}`), 1);

    const code = await n.stop();
    const stoppedAt = Date.now();
    nodes.splice(nodes.indexOf(n), 1);
    assert.equal(code, 0);
    assert.equal(await redis.exists(`${keys.workerSpace(10)}w:${id}`), 0, 'the lease key outlived the process');
    const recorded = Number(await redis.get(lastKey));
    assert.equal(recorded, msOf(ids[ids.length - 1]), 'the last timestamp is not the last ms the process issued at');
    assert.ok(recorded < stoppedAt);
    assert.ok(n.output.some((l) => l.includes('worker-id lease released') && l.includes('"released":true')));
    const s = spaceOf(await workers(byName.get('sf-n2')!.url), 10)!;
    assert.equal(
      s.leases.some((l) => l.worker_id === id),
      false,
      'still listed as leased',
    );
    assert.equal(
      s.leases.some((l) => l.owner === 'sf-n1'),
      false,
    );
    // Its 2-bit lease went back too.
    const s2 = spaceOf(await workers(byName.get('sf-n2')!.url), 2)!;
    assert.equal(
      s2.leases.some((l) => l.owner === 'sf-n1'),
      false,
    );
  });
});
