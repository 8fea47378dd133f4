// The faults of the chaos campaign, on a schedule drawn from the seed: a Redis (the default or
// the named one) restarted empty, MariaDB stopped and started, an idmint process SIGKILLed and
// started again, a process's clock shifted (and put back later), a process's worker-id lease
// made to expire, and faults of the network between idmint and a store (the default Redis,
// the named Redis, MariaDB; through fault proxies): a slow link (latency, jitter, stalls
// longer than the command timeout), and a blackhole (nothing forwarded, no RST, no FIN; the
// connections open then stay dead). Faults run one after the other, in rounds holding every
// kind once; a clock shift is put back in the background while the next ones run. In the
// Sentinel topology (--topology sentinel) the default Redis is a Sentinel group: a further
// kind, redis-failover, either forces a failover (SENTINEL FAILOVER) or SIGKILLs the master
// (the sentinels promote the replica; the killed server comes back empty as a replica), and
// the faults of the default Redis that need a single server or a proxy (restart, network)
// hit the named Redis instead; and redis-end ends one of a process's connections to the
// default Redis from inside (its socket dropped, its connector disconnected while it asks the
// sentinels for the master, as ioredis's failover detector can), which ioredis leaves in its
// final state: the process must open it again and serve within END_HEALED_MS, or the fault
// counts as unhealed and fails the run.
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { nowUs } from './recorder.js';
import { rng } from '../../tools/prng.js';
import type { ServerPool } from './servers.js';
import type { ChaosSentinel } from './sentinel.js';
import type { ChaosMysql, ChaosRedis } from './services.js';
import type { FaultProxy } from '../../tools/proxies/fault-proxy.js';

export const FAULT_KINDS = [
  'redis-restart',
  'mysql-restart',
  'kill',
  'clock-shift',
  'lease-expire',
  'net-slow',
  'net-blackhole',
] as const;
/**
 * The kinds of the Sentinel topology: every kind above, a failover of the default Redis, and a connection to it ended
 * from inside.
 */
export const SENTINEL_FAULT_KINDS = [...FAULT_KINDS, 'redis-failover', 'redis-end'] as const;

/** How soon a process serves again after redis-end: ready, and a take on the default Redis answered. */
export const END_HEALED_MS = 15000;

export type Topology = 'single' | 'sentinel';

/** The links a network fault hits, by slot modulo their number. */
export const NET_TARGETS = ['redis', 'redis-b', 'mysql'] as const;
export type NetTarget = (typeof NET_TARGETS)[number];
export type FaultKind = (typeof SENTINEL_FAULT_KINDS)[number];

export interface PlannedFault {
  /** Seconds after the load started. */
  readonly at: number;
  readonly kind: FaultKind;
  readonly slot: number;
  /** How long the fault lasts (down time, shift duration), ms. */
  readonly holdMs: number;
  /** clock-shift: the offset, ms. */
  readonly offsetMs?: number;
}

export interface FaultRecord {
  readonly kind: FaultKind;
  slot?: number;
  /** µs on the monotonic clock: when it began and when the system was whole again. */
  readonly start: number;
  end?: number;
  /** kill: when the killed process was gone, and when its successor listened. */
  deadAt?: number;
  upAt?: number;
  detail?: string;
  /** The fault could not be injected (its target was down). */
  skipped?: string;
  /** redis-end: the process did not serve again in time. */
  unhealed?: string;
}

const SHIFTS = [-2500, -1200, -400, -8, 600, 1500, 3000];

/**
 * A schedule over `durationS` seconds: nothing in the first and last stretch (warm-up and
 * recovery), then a fault about every `everyS` seconds, in rounds that hold every kind once.
 */
export function planFaults(
  seed: number,
  durationS: number,
  servers: number,
  everyS?: number,
  topology: Topology = 'single',
): PlannedFault[] {
  const all: readonly FaultKind[] = topology === 'sentinel' ? SENTINEL_FAULT_KINDS : FAULT_KINDS;
  const g = rng(seed ^ 0x5eed);
  const warm = Math.min(8, Math.max(2, durationS * 0.1));
  const tail = Math.min(12, Math.max(4, durationS * 0.15));
  const window = durationS - warm - tail;
  if (window <= 0) return [];
  const every = everyS ?? (durationS >= 60 ? 7 : 3.5);
  const count = Math.max(1, Math.floor(window / every));
  // Rounds of every kind once, each round in a new order: the kinds stay balanced. A round cut
  // short by the end of the run keeps the failover of the Sentinel topology, the fault it
  // exists for: a run with any fault at all fails its default Redis over at least once.
  const kinds: FaultKind[] = [];
  while (kinds.length < count) {
    const round = [...all];
    for (let i = round.length - 1; i > 0; i--) {
      const j = g.int(0, i);
      [round[i], round[j]] = [round[j], round[i]];
    }
    const keep = count - kinds.length;
    const failover = round.indexOf('redis-failover');
    if (failover >= keep) {
      const j = g.int(0, keep - 1);
      [round[failover], round[j]] = [round[j], round[failover]];
    }
    kinds.push(...round.slice(0, keep));
  }
  return kinds.map((kind, i) => {
    const at = warm + (window * i) / count + g.next() * (window / count) * 0.3;
    const slot = g.int(0, servers - 1);
    switch (kind) {
      case 'redis-restart':
        return { at, kind, slot, holdMs: g.int(200, 1500) };
      case 'mysql-restart':
        return { at, kind, slot, holdMs: g.int(1000, 5000) };
      case 'kill':
        return { at, kind, slot, holdMs: g.int(200, 1500) };
      case 'clock-shift':
        return { at, kind, slot, holdMs: g.int(1500, 4000), offsetMs: g.pick(SHIFTS) };
      case 'lease-expire':
        return { at, kind, slot, holdMs: 0 };
      case 'net-slow':
        return { at, kind, slot: g.int(0, NET_TARGETS.length - 1), holdMs: g.int(1500, 4000) };
      case 'net-blackhole':
        return { at, kind, slot: g.int(0, NET_TARGETS.length - 1), holdMs: g.int(1000, 4000) };
      case 'redis-failover':
        // slot 0: SENTINEL FAILOVER; 1: the master SIGKILLed, back after holdMs.
        return { at, kind, slot: g.int(0, 1), holdMs: g.int(200, 1500) };
      case 'redis-end':
        return { at, kind, slot, holdMs: 0 };
    }
  });
}

export class FaultRunner {
  readonly done: FaultRecord[] = [];
  private readonly background: Promise<void>[] = [];
  private stopped = false;

  constructor(
    private readonly pool: ServerPool,
    /** The default Redis (none in the Sentinel topology) and the named one ("b"). */
    private readonly redis: readonly [ChaosRedis | undefined, ChaosRedis],
    private readonly mysql: ChaosMysql,
    /** The proxies in front of the stores (the default Redis has none in the Sentinel topology). */
    private readonly proxies: Readonly<Partial<Record<NetTarget, FaultProxy>>>,
    private readonly log: (line: string) => void,
    /** The Sentinel group that is the default Redis, in the Sentinel topology. */
    private readonly sentinel?: ChaosSentinel,
    /** A tag on the default Redis, taken from to see a process serve. */
    private readonly defaultTag = 'chaos-node',
  ) {}

  /** Faults the system did not heal from in time. */
  unhealed(): string[] {
    return this.done.flatMap((f) => (f.unhealed ? [f.unhealed] : []));
  }

  /** The link a network fault of `slot` hits: the named Redis's for the default one's when that has no proxy. */
  private netTarget(slot: number): NetTarget {
    const t = NET_TARGETS[slot % NET_TARGETS.length];
    return this.proxies[t] ? t : 'redis-b';
  }

  /** Runs the plan from `startedAt` (Date.now()) until it ends or stop() is called. */
  async run(plan: readonly PlannedFault[], startedAt: number): Promise<void> {
    for (const f of plan) {
      const wait = startedAt + f.at * 1000 - Date.now();
      if (wait > 0) await this.sleepUnlessStopped(wait);
      if (this.stopped) break;
      const rec: FaultRecord = { kind: f.kind, slot: f.slot, start: nowUs() };
      this.done.push(rec);
      try {
        await this.inject(f, rec);
      } catch (err) {
        rec.detail = `${rec.detail ?? ''} failed: ${(err as Error).message}`.trim();
        this.log(`fault ${f.kind} failed: ${(err as Error).message}`);
      }
      rec.end ??= nowUs();
    }
  }

  stop(): void {
    this.stopped = true;
  }

  /** Waits for shifts still to be put back. */
  async settle(): Promise<void> {
    await Promise.all(this.background);
  }

  counts(): Map<string, number> {
    const m = new Map<string, number>();
    for (const f of this.done) if (!f.skipped) m.set(f.kind, (m.get(f.kind) ?? 0) + 1);
    return m;
  }

  write(path: string): void {
    writeFileSync(path, this.done.map((f) => JSON.stringify(f)).join('\n') + '\n');
  }

  private async sleepUnlessStopped(ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (!this.stopped && Date.now() < until) await sleep(Math.min(200, until - Date.now()));
  }

  private async inject(f: PlannedFault, rec: FaultRecord): Promise<void> {
    switch (f.kind) {
      case 'redis-restart': {
        const which = this.redis[0] ? f.slot % 2 : 1;
        const redis = this.redis[which]!;
        await redis.kill();
        await sleep(f.holdMs);
        await redis.start();
        rec.detail = `${which === 0 ? 'default' : 'named (b)'} Redis down ${f.holdMs} ms, restarted empty`;
        return;
      }
      case 'net-slow': {
        const target = this.netTarget(f.slot);
        const proxy = this.proxies[target]!;
        // Latency with jitter, and now and then a stall longer than the command timeout.
        proxy.set({ latencyMs: 2, jitterMs: 20, stallRate: 0.03, stallMs: 1500 });
        await sleep(f.holdMs);
        proxy.clear();
        rec.detail = `${target} link slow (latency, jitter, stalls) for ${f.holdMs} ms`;
        return;
      }
      case 'net-blackhole': {
        const target = this.netTarget(f.slot);
        const proxy = this.proxies[target]!;
        proxy.blackhole();
        await sleep(f.holdMs);
        proxy.restore();
        rec.detail = `${target} blackholed for ${f.holdMs} ms (its open connections stay dead)`;
        return;
      }
      case 'redis-failover': {
        if (!this.sentinel) return void (rec.skipped = 'no Sentinel group');
        rec.detail = await this.sentinel.failover(f.slot % 2 === 0, f.holdMs);
        this.log(rec.detail);
        return;
      }
      case 'redis-end': {
        const slot = this.upSlot(f.slot);
        if (slot === undefined) return void (rec.skipped = 'no process up');
        rec.slot = slot;
        const r = (await this.pool.debug(slot, 'redis/end', {})) as { role: string };
        const t0 = Date.now();
        const healed = await this.serving(slot, END_HEALED_MS);
        rec.detail = `slot ${slot}: ${r.role} connection ended from inside, ${healed ? `serving again after ${Date.now() - t0} ms` : 'not serving'}`;
        if (!healed) {
          rec.unhealed = `slot ${slot} not ready and serving within ${END_HEALED_MS} ms after its ${r.role} connection ended`;
          this.log(`fault redis-end: ${rec.unhealed}`);
        }
        return;
      }
      case 'mysql-restart': {
        await this.mysql.stop();
        await sleep(f.holdMs);
        await this.mysql.start();
        rec.detail = `down ${f.holdMs} ms`;
        return;
      }
      case 'kill': {
        if (!this.pool.isUp(f.slot)) return void (rec.skipped = 'slot down');
        const inst = await this.pool.kill(f.slot);
        rec.deadAt = nowUs();
        await sleep(f.holdMs);
        await this.pool.start(f.slot);
        rec.upAt = nowUs();
        rec.detail = `${inst?.nodeId} killed, next instance after ${f.holdMs} ms`;
        return;
      }
      case 'clock-shift': {
        const slot = this.upSlot(f.slot);
        if (slot === undefined) return void (rec.skipped = 'no process up');
        await this.pool.debug(slot, 'clock', { offset_ms: f.offsetMs });
        rec.detail = `slot ${slot} clock ${f.offsetMs! > 0 ? '+' : ''}${f.offsetMs} ms for ${f.holdMs} ms`;
        rec.slot = slot;
        this.background.push(
          sleep(f.holdMs)
            .then(() => (this.pool.isUp(slot) ? this.pool.debug(slot, 'clock', { offset_ms: 0 }) : undefined))
            .then(
              () => undefined,
              (err: Error) => this.log(`putting the clock of slot ${slot} back failed: ${err.message}`),
            ),
        );
        return;
      }
      case 'lease-expire': {
        const slot = this.upSlot(f.slot);
        if (slot === undefined) return void (rec.skipped = 'no process up');
        rec.slot = slot;
        const r = (await this.pool.debug(slot, 'lease/expire', {})) as { expired: unknown[] };
        rec.detail = `slot ${slot}: ${JSON.stringify(r.expired)}`;
        return;
      }
    }
  }

  /**
   * True once the slot's process answers /readyz with 200 and a take on the default Redis, within ms (false if killed
   * meanwhile).
   */
  private async serving(slot: number, ms: number): Promise<boolean> {
    const until = Date.now() + ms;
    while (Date.now() < until && !this.stopped) {
      if (!this.pool.isUp(slot)) return true;
      const ok = await Promise.all([
        fetch(`${this.pool.url(slot)}/readyz`, { signal: AbortSignal.timeout(2000) }).then((r) => r.status === 200),
        fetch(`${this.pool.url(slot)}/v1/ids/${this.defaultTag}?count=1`, { signal: AbortSignal.timeout(2000) }).then(
          (r) => r.status === 200,
        ),
      ]).then(
        (both) => both.every(Boolean),
        () => false,
      );
      if (ok) return true;
      await sleep(100);
    }
    return this.stopped;
  }

  /** The slot if its process is up, else another one that is. */
  private upSlot(slot: number): number | undefined {
    for (let i = 0; i < this.pool.size; i++) {
      const s = (slot + i) % this.pool.size;
      if (this.pool.isUp(s)) return s;
    }
    return undefined;
  }
}
