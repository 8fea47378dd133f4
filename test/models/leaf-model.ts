// Executable models of Meituan-Dianping/Leaf, written from its source (leaf-core, files named
// below): segment mode (what its leaf_alloc rows end as, and every ID its servers handed out)
// and snowflake mode (every ID, from each node's clock, ZooKeeper worker ID and sequence).
// Pure and deterministic: the randomness Leaf draws (its sequence start) is part of the
// scenario.
//
// Segment mode (segment/SegmentIDGenImpl.java, segment/dao/IDAllocMapper.java, model/Segment.java):
// - a server's first get of a tag runs updateMaxIdAndGetLeafAlloc: "UPDATE leaf_alloc SET
//   max_id = max_id + step WHERE biz_tag = ?" then reads the row; the segment hands out
//   [max_id - step, max_id) (value = maxId - buffer step, getAndIncrement while value < max);
// - when less than 90% of the current segment is idle and no load runs, a thread loads the
//   next segment: the first time with the row's step (updateTimestamp 0), later with a step
//   that doubles when the last load was under 15 minutes ago (up to 1,000,000) and halves
//   when it was 30 minutes or more (not below the row's step): "UPDATE leaf_alloc SET max_id
//   = max_id + #{step}"; the segment is [max_id - nextStep, max_id);
// - a segment used up switches to the next if it is ready, else the call fails (-3);
// - a failed update (database away) leaves the next segment unloaded; a restarted server
//   starts with no segments; the operator may change a row's step at any time.
//
// Snowflake mode (snowflake/SnowflakeIDGenImpl.java get, SnowflakeZookeeperHolder.java):
// - id = (timestamp - twepoch) << 22 | workerId << 12 | sequence, twepoch 1288834974657 by
//   default (a constructor argument), worker ID from ZooKeeper (a persistent sequential node
//   per ip:port, kept across restarts), 10 worker bits, 12 sequence bits;
// - a new millisecond starts the sequence at RANDOM.nextInt(100); the same millisecond adds 1,
//   and on wrapping to 0 draws again and waits for the next millisecond (tilNextMillis);
// - a clock behind the last timestamp by at most 5 ms waits twice that and tries once more;
//   further behind, the call fails (-3);
// - a node reports its time to ZooKeeper every 3 s and refuses to start while its clock is
//   behind its last report (CheckLastTimeException).

export interface LeafSegmentScenario {
  readonly tags: readonly { readonly tag: string; readonly maxId: number; readonly step: number }[];
  readonly servers: number;
  readonly startMs: number;
  readonly events: readonly LeafSegmentEvent[];
}

export type LeafSegmentEvent =
  | { readonly dt: number; readonly kind: 'get'; readonly server: number; readonly tag: number; readonly n: number }
  | { readonly dt: number; readonly kind: 'crash' | 'dbDown' | 'dbUp' | 'load'; readonly server: number }
  | { readonly dt: number; readonly kind: 'setStep'; readonly tag: number; readonly step: number };

export interface LeafSegmentOutcome {
  readonly rows: readonly { readonly tag: string; readonly maxId: number; readonly step: number }[];
  readonly issued: ReadonlyMap<string, readonly number[]>;
}

interface Segment {
  value: number;
  max: number;
  step: number;
}

interface Buffer {
  current: Segment | null;
  next: Segment | null;
  updateTimestamp: number;
  step: number;
  minStep: number;
  loading: boolean;
}

const SEGMENT_DURATION = 15 * 60 * 1000;
const MAX_STEP = 1_000_000;

export function runLeafSegment(s: LeafSegmentScenario): LeafSegmentOutcome {
  const rows = new Map(s.tags.map((t) => [t.tag, { ...t }]));
  const issued = new Map<string, number[]>(s.tags.map((t) => [t.tag, []]));
  let caches: Map<string, Buffer>[] = Array.from({ length: s.servers }, () => new Map());
  let now = s.startMs;
  let dbDown = false;
  const update = (tag: string, step: number | undefined) => {
    if (dbDown) return undefined;
    const row = rows.get(tag)!;
    row.maxId += step ?? row.step;
    return { maxId: row.maxId, step: row.step };
  };
  const loadNext = (tag: string, b: Buffer) => {
    b.loading = false;
    let got: { maxId: number; step: number } | undefined;
    let step: number;
    if (b.updateTimestamp === 0) {
      got = update(tag, undefined);
      if (!got) return;
      b.updateTimestamp = now;
      step = b.step = b.minStep = got.step;
    } else {
      const duration = now - b.updateTimestamp;
      step = b.step;
      if (duration < SEGMENT_DURATION) {
        if (step * 2 <= MAX_STEP) step *= 2;
      } else if (duration >= SEGMENT_DURATION * 2) {
        step = step / 2 >= b.minStep ? Math.floor(step / 2) : step;
      }
      got = update(tag, step);
      if (!got) return;
      b.updateTimestamp = now;
      b.step = step;
      b.minStep = got.step;
    }
    b.next = { value: got.maxId - step, max: got.maxId, step };
  };
  const get = (cache: Map<string, Buffer>, tag: string): boolean => {
    let b = cache.get(tag);
    if (!b) {
      const got = update(tag, undefined);
      if (!got) return false;
      b = {
        current: { value: got.maxId - got.step, max: got.maxId, step: got.step },
        next: null,
        updateTimestamp: 0,
        step: got.step,
        minStep: got.step,
        loading: false,
      };
      cache.set(tag, b);
    }
    for (;;) {
      const seg = b.current!;
      if (!b.next && !b.loading && seg.max - seg.value < 0.9 * seg.step) b.loading = true;
      const v = seg.value++;
      if (v < seg.max) {
        issued.get(tag)!.push(v);
        return true;
      }
      // The loader thread finishes before the caller gives up waiting (waitAndSleep).
      if (b.loading) loadNext(tag, b);
      if (!b.next) return false;
      b.current = b.next;
      b.next = null;
    }
  };
  for (const e of s.events) {
    now += e.dt;
    switch (e.kind) {
      case 'get': {
        const cache = caches[e.server % s.servers];
        const tag = s.tags[e.tag % s.tags.length].tag;
        for (let i = 0; i < e.n; i++) if (!get(cache, tag)) break;
        break;
      }
      case 'load':
        for (const [tag, b] of caches[e.server % s.servers]) if (b.loading) loadNext(tag, b);
        break;
      case 'crash':
        caches = caches.map((c, i) => (i === e.server % s.servers ? new Map() : c));
        break;
      case 'dbDown':
      case 'dbUp':
        dbDown = e.kind === 'dbDown';
        break;
      case 'setStep':
        rows.get(s.tags[e.tag % s.tags.length].tag)!.step = e.step;
        break;
    }
  }
  return { rows: [...rows.values()], issued };
}

export const LEAF_TWEPOCH = 1288834974657;
const MAX_SKEW_MS = 12 * 3_600_000;

export interface LeafSnowflakeScenario {
  readonly twepoch: number;
  /** Each node's ZooKeeper worker ID. */
  readonly workers: readonly number[];
  readonly startMs: number;
  readonly events: readonly LeafSnowflakeEvent[];
  /** Leaf's RANDOM.nextInt(100) draws, used in turn. */
  readonly draws: readonly number[];
  /** Milliseconds from the last event to the import, by idmint's (true) clock. */
  readonly importDelay: number;
}

export type LeafSnowflakeEvent =
  | { readonly dt: number; readonly kind: 'get'; readonly node: number; readonly n: number }
  | { readonly dt: number; readonly kind: 'clock'; readonly node: number; readonly delta: number }
  | { readonly dt: number; readonly kind: 'restart'; readonly node: number };

export interface LeafSnowflakeOutcome {
  readonly issued: readonly bigint[];
  readonly importMs: number;
}

export function runLeafSnowflake(s: LeafSnowflakeScenario): LeafSnowflakeOutcome {
  const nodes = s.workers.map((worker) => ({ worker, skew: 0, last: -1, seq: 0, reported: 0, up: true }));
  const issued: bigint[] = [];
  let now = s.startMs;
  let draw = 0;
  const random = () => s.draws[draw++ % s.draws.length] % 100;
  for (const e of s.events) {
    now += e.dt;
    const n = nodes[e.node % nodes.length];
    const clock = () => now + n.skew;
    if (e.kind === 'clock') {
      // Clocks stay within half a day of the truth (the import's planner allows a day).
      n.skew = Math.max(-MAX_SKEW_MS, Math.min(MAX_SKEW_MS, n.skew + e.delta));
      continue;
    }
    if (e.kind === 'restart') {
      // A clock behind the last report keeps the node from starting until it catches up.
      n.up = clock() >= n.reported;
      n.last = -1;
      continue;
    }
    if (!n.up) {
      n.up = clock() >= n.reported;
      if (!n.up) continue;
    }
    for (let i = 0; i < e.n; i++) {
      let ts = clock();
      if (ts < n.last) {
        // Waits 2 x offset (<= 5 ms): the model's clock does not move while it waits.
        if (n.last - ts > 5 || clock() < n.last) break;
      }
      if (ts === n.last) {
        n.seq = (n.seq + 1) & 4095;
        if (n.seq === 0) {
          n.seq = random();
          // tilNextMillis: the caller waits until the clock passes the last millisecond.
          now += n.last + 1 - ts;
          ts = clock();
        }
      } else n.seq = random();
      n.last = ts;
      if (ts - n.reported >= 3000) n.reported = ts;
      issued.push((BigInt(ts - s.twepoch) << 22n) | (BigInt(n.worker) << 12n) | BigInt(n.seq));
    }
  }
  // The operator stops Leaf and imports: idmint's clock is the true one, which a Leaf node's
  // clock may have run ahead of.
  return { issued, importMs: now + 1 + s.importDelay };
}
