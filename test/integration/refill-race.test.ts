// suite: cluster
// Racing refills and the install fence. Several refill() calls for one tag with the same
// job data (as at-least-once delivery produces) each get their own segment from MySQL; the
// install script lets one of them in and refuses the others, so a wasted segment is never
// shared. Then the fence itself, through SegmentStore: a lower segment is refused as
// 'stale', a wrong gen as 'reset', a second next segment as 'next-present', and an install
// of a gen from before Redis lost the key is refused. Finally IDs are driven out over HTTP:
// none twice, none from a refused segment.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import mysql, { type RowDataPacket } from 'mysql2/promise';
import { refill } from '../../src/consumer/refill-worker.js';
import type { RefillJobData, RefillOutcome } from '../../src/jobs/refill.js';
import { CountersRepo, type Allocation } from '../../src/store/mysql/counters-repo.js';
import { poolOptions } from '../../src/store/mysql/pool.js';
import type { Range } from '../../src/core/ranges.js';
import { cleanup, testNames } from '../../tools/env.js';
import { createTag, fetchIds, startLocalNode } from '../../tools/node.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

const STEP = 100;

/**
 * CountersRepo with seams around allocate(): a hook before it (a barrier, or a fault), one
 * after it (a barrier, so no racer installs before all have allocated), and optionally one
 * allocation at a time.
 */
class HookedCounters extends CountersRepo {
  before: (() => Promise<void>) | undefined;
  after: (() => Promise<void>) | undefined;
  serial = false;
  private chain: Promise<unknown> = Promise.resolve();

  override async allocate(
    tag: string,
    shard: number,
    epoch: number,
    step: number,
    nodeId: string,
  ): Promise<Allocation> {
    if (this.before) await this.before();
    let out: Allocation;
    if (this.serial) {
      const run = this.chain.then(() => super.allocate(tag, shard, epoch, step, nodeId));
      this.chain = run.catch(() => undefined);
      out = await run;
    } else {
      out = await super.allocate(tag, shard, epoch, step, nodeId);
    }
    if (this.after) await this.after();
    return out;
  }

  reset(): void {
    this.before = undefined;
    this.after = undefined;
    this.serial = false;
  }
}

/** A promise that resolves once n callers are waiting on it. */
function barrier(n: number): () => Promise<void> {
  let waiting = 0;
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  return () => {
    if (++waiting >= n) open();
    return gate;
  };
}

const disjoint = (rs: Range[]) => {
  const s = [...rs].sort((a, b) => a[0] - b[0]);
  for (let i = 1; i < s.length; i++) if (s[i][0] <= s[i - 1][1]) return false;
  return true;
};

describe('racing refills and the install fence', () => {
  const names = testNames();
  let node: LocalNode;
  let direct: mysql.Pool;
  let counters: HookedCounters;
  /** Segments allocated in MySQL but refused by Redis: no ID of them may ever be served. */
  const refused: { tag: string; range: Range; why: string }[] = [];
  /** IDs handed out by direct takes in these tests. */
  const taken = new Map<string, number[]>();
  const ref = (tag: string) => ({ tag, epoch: 1, shard: 0 });
  const deps = (nodeId: string) => ({
    tags: node.rt.tags,
    counters,
    segments: node.rt.segments,
    nodeId,
    log: node.rt.log,
  });
  const rows = async (tag: string) =>
    (
      await direct.query<RowDataPacket[]>(
        'SELECT first_id, last_id, node_id FROM idmint_segments WHERE tag = ? ORDER BY id',
        [tag],
      )
    )[0].map((r) => ({
      range: [Number(r.first_id), Number(r.last_id)] as Range,
      nodeId: String(r.node_id),
    }));
  const coldGen = async (tag: string) => {
    const t = await node.rt.segments.take(ref(tag), 1, 0.2);
    assert.equal(t.status, 'cold');
    return t.gen;
  };
  const takeDirect = async (tag: string, n: number) => {
    const t = await node.rt.segments.take(ref(tag), n, 0.2);
    const ids: number[] = [];
    for (const [a, b] of t.ranges) for (let v = a; v <= b; v++) ids.push(v);
    taken.set(tag, [...(taken.get(tag) ?? []), ...ids]);
    return { ...t, ids };
  };

  before(async () => {
    node = await startLocalNode(names, { LOG_LEVEL: 'error', NODE_ID: 'race-node' });
    direct = mysql.createPool(poolOptions(names.mysqlUrl));
    counters = new HookedCounters(node.rt.pool);
    for (const tag of ['race', 'dryrace', 'fence', 'concurrent'])
      await createTag(node.url, { tag, step: STEP, min_step: STEP, max_step: STEP });
  });

  after(async () => {
    await node?.close().catch(() => undefined);
    await direct?.end().catch(() => undefined);
    await cleanup(names);
  });

  it('racing prefetch refills: distinct segments, exactly one installed as next, the others refused', async () => {
    const gen = await coldGen('race');
    const first = await refill({ tag: 'race', epoch: 1, shard: 0, gen, seg: 0, urgent: true }, deps('first'));
    assert.equal(first.result, 'current');
    const got = await takeDirect('race', 30);
    assert.equal(got.status, 'ok');

    // Four deliveries of the same prefetch job: all pass the early checks before any
    // allocates, and all allocate before any installs. (Allocations run one at a time here;
    // concurrent ones are the subject of the last test.)
    const N = 4;
    Object.assign(counters, { before: barrier(N), after: barrier(N), serial: true });
    const job: RefillJobData = { tag: 'race', epoch: 1, shard: 0, gen, seg: 1, urgent: false };
    const out: RefillOutcome[] = await Promise.all(
      Array.from({ length: N }, (_, i) => refill(job, deps(`racer-${i}`))),
    );
    counters.reset();

    const allocated = out.filter((o) => o.first !== undefined).map((o) => [o.first!, o.last!] as Range);
    assert.equal(allocated.length, N, `every racer allocated: ${JSON.stringify(out)}`);
    assert.ok(disjoint(allocated), `distinct segments: ${JSON.stringify(allocated)}`);
    const logged = (await rows('race')).filter((r) => r.nodeId.startsWith('racer-')).map((r) => r.range);
    assert.deepEqual(
      [...logged].sort((a, b) => a[0] - b[0]),
      [...allocated].sort((a, b) => a[0] - b[0]),
      'idmint_segments logs exactly these segments',
    );

    const won = out.filter((o) => o.result === 'next');
    assert.equal(won.length, 1, `exactly one installed: ${JSON.stringify(out)}`);
    assert.deepEqual(
      out.filter((o) => o !== won[0]).map((o) => o.result),
      Array(N - 1).fill('next-present'),
    );
    for (const o of out) if (o !== won[0]) refused.push({ tag: 'race', range: [o.first!, o.last!], why: o.result });

    const st = await node.rt.segments.stats(ref('race'));
    assert.deepEqual(st.next, [won[0].first, won[0].last], 'Redis holds the winner as next segment');
    assert.equal(st.cur, 31);
    assert.equal(st.end, STEP);
  });

  it('racing urgent refills of a dry tag: one becomes current, at most one next above it, the rest refused', async () => {
    const gen = await coldGen('dryrace');
    const N = 4;
    Object.assign(counters, { before: barrier(N), after: barrier(N), serial: true });
    const job: RefillJobData = { tag: 'dryrace', epoch: 1, shard: 0, gen, seg: 0, urgent: true };
    const out = await Promise.all(Array.from({ length: N }, (_, i) => refill(job, deps(`racer-${i}`))));
    counters.reset();

    const allocated = out.map((o) => [o.first!, o.last!] as Range);
    assert.ok(
      out.every((o) => o.first !== undefined),
      `every racer allocated: ${JSON.stringify(out)}`,
    );
    assert.ok(disjoint(allocated), 'distinct segments');
    const current = out.filter((o) => o.result === 'current');
    const next = out.filter((o) => o.result === 'next');
    assert.equal(current.length, 1, `one current: ${JSON.stringify(out)}`);
    assert.ok(next.length <= 1, 'at most one next');
    if (next.length) assert.ok(next[0].first! > current[0].last!, 'the next segment lies above the current one');
    for (const o of out) {
      if (o.result === 'current' || o.result === 'next') continue;
      assert.ok(o.result === 'stale' || o.result === 'next-present', `refused: ${o.result}`);
      refused.push({ tag: 'dryrace', range: [o.first!, o.last!], why: o.result });
    }
    const st = await node.rt.segments.stats(ref('dryrace'));
    assert.deepEqual([st.cur, st.end], [current[0].first, current[0].last]);
    assert.deepEqual(st.next, next.length ? [next[0].first, next[0].last] : undefined);

    // IDs come from the installed current segment, in order.
    const got = await takeDirect('dryrace', 10);
    assert.deepEqual(
      got.ids,
      Array.from({ length: 10 }, (_, i) => current[0].first! + i),
    );
  });

  it('the install fence refuses stale segments, wrong gens, a second next, and gens from before Redis lost the key', async () => {
    const segs = node.rt.segments;
    const r = ref('fence');
    const gen = await coldGen('fence');
    const alloc = async () => {
      const a = await counters.allocate('fence', 0, 1, STEP, 'fence-test');
      assert.equal(a.kind, 'segment');
      return (a as { range: Range }).range;
    };
    const a1 = await alloc();
    const a2 = await alloc();
    const a3 = await alloc();
    const a4 = await alloc();

    assert.equal(await segs.install(r, gen, a2, 0.2), 'current');
    // A slower refill's lower segment arrives after a higher one was installed.
    assert.equal(await segs.install(r, gen, a1, 0.2), 'stale');
    refused.push({ tag: 'fence', range: a1, why: 'stale' });
    // A refill requested under another gen (Redis lost the key, or the tag was reset).
    assert.equal(await segs.install(r, 'not-the-gen', a3, 0.2), 'reset');
    assert.equal(await segs.install(r, gen, a3, 0.2), 'next');
    // A next segment is already queued.
    assert.equal(await segs.install(r, gen, a4, 0.2), 'next-present');
    let st = await segs.stats(r);
    assert.deepEqual([st.cur, st.end, st.next], [a2[0], a2[1], a3]);

    const got = await takeDirect('fence', STEP + 5);
    assert.equal(got.status, 'ok');
    assert.deepEqual(
      got.ranges,
      [
        [a2[0], a2[1]],
        [a3[0], a3[0] + 4],
      ],
      'moves from current into next',
    );

    // Redis loses the key: an install under the old gen is refused, before and after a take
    // re-created the hash under a new gen; a late refill of the old gen installs nothing.
    await node.rt.redis.del(segs.key(r));
    assert.equal(await segs.install(r, gen, a4, 0.2), 'reset');
    const gen2 = await coldGen('fence');
    assert.notEqual(gen2, gen);
    assert.equal(await segs.install(r, gen, a4, 0.2), 'reset');
    refused.push({ tag: 'fence', range: a4, why: 'reset' });
    st = await segs.stats(r);
    assert.equal(st.gen, gen2);
    assert.ok(st.cur! > st.end!, 'nothing installed under the new gen yet');
    assert.equal(st.next, undefined);

    // The same through refill(): the key is lost while the refill is allocating, after its
    // early checks passed; the install script refuses it.
    let gen3 = '';
    counters.before = async () => {
      counters.before = undefined;
      await node.rt.redis.del(segs.key(r));
      gen3 = await coldGen('fence');
    };
    const late = await refill({ tag: 'fence', epoch: 1, shard: 0, gen: gen2, seg: 0, urgent: true }, deps('late'));
    assert.equal(late.result, 'reset', JSON.stringify(late));
    assert.ok(late.first !== undefined, 'it did allocate a segment');
    refused.push({ tag: 'fence', range: [late.first!, late.last!], why: 'reset' });
    st = await segs.stats(r);
    assert.equal(st.gen, gen3);
    assert.ok(st.cur! > st.end!, 'the refused segment was not installed');

    // A refill under the current gen installs above everything.
    const ok = await refill({ tag: 'fence', epoch: 1, shard: 0, gen: gen3, seg: 0, urgent: true }, deps('fresh'));
    assert.equal(ok.result, 'current');
    assert.ok(ok.first! > late.last!);
  });

  it('serves IDs afterwards with no duplicate and none from a refused segment', { timeout: 30000 }, async () => {
    assert.ok(refused.length >= 7, `${refused.length} refused segments recorded`);
    for (const tag of ['race', 'dryrace', 'fence']) {
      const ids: bigint[] = [];
      // Several segments' worth, through the node's own refills.
      for (let i = 0; i < 8; i++) ids.push(...(await fetchIds(node.url, tag, 97)));
      for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], `${tag}: ascending at ${ids[i]}`);
      const all = [...(taken.get(tag) ?? []).map(BigInt), ...ids];
      assert.equal(new Set(all).size, all.length, `${tag}: no ID twice`);
      assert.ok(all.length >= 776, `${tag}: ${all.length} IDs checked`);
      const wasted = refused.filter((x) => x.tag === tag);
      assert.ok(wasted.length > 0);
      for (const id of all) {
        const hit = wasted.find((w) => id >= BigInt(w.range[0]) && id <= BigInt(w.range[1]));
        assert.equal(hit, undefined, `${tag}: ID ${id} comes from a refused segment (${hit?.why})`);
      }
      // Every ID lies in a segment MySQL allocated, and the segment log has no overlap.
      const logged = (await rows(tag)).map((x) => x.range);
      assert.ok(disjoint(logged), `${tag}: allocated segments are disjoint`);
      for (const id of ids)
        assert.ok(
          logged.some(([a, b]) => id >= BigInt(a) && id <= BigInt(b)),
          `${tag}: ${id} lies in an allocated segment`,
        );
    }
  });

  it('concurrent refills of one tag all get a segment: none fails on a MySQL lock conflict', {
    timeout: 20000,
  }, async () => {
    // Two deliveries of one job allocate at the same moment, as two workers would. Each must
    // get its own segment; a refill that errors instead only comes back after a retry delay.
    const r = ref('concurrent');
    const errors: string[] = [];
    const segments: Range[] = [];
    for (let trial = 0; trial < 12; trial++) {
      await node.rt.redis.del(node.rt.segments.key(r));
      const gen = await coldGen('concurrent');
      counters.before = barrier(2);
      const job: RefillJobData = { tag: 'concurrent', epoch: 1, shard: 0, gen, seg: 0, urgent: true };
      const out = await Promise.allSettled([refill(job, deps('twin-a')), refill(job, deps('twin-b'))]);
      counters.reset();
      for (const o of out) {
        if (o.status === 'rejected') errors.push((o.reason as Error).message);
        else if (o.value.first !== undefined) segments.push([o.value.first, o.value.last!]);
      }
      const installed = out.filter(
        (o) => o.status === 'fulfilled' && (o.value.result === 'current' || o.value.result === 'next'),
      );
      assert.ok(
        installed.length >= 1 || out.some((o) => o.status === 'rejected'),
        `trial ${trial}: a segment was installed`,
      );
    }
    assert.ok(disjoint(segments), 'the segments that were allocated are disjoint');
    assert.ok(disjoint((await rows('concurrent')).map((x) => x.range)), 'the segment log has no overlap');
    assert.equal(
      errors.length,
      0,
      `${errors.length} of 24 concurrent refills failed instead of allocating: ${errors[0]}`,
    );
  });
});
