// The samples of the server under soak: its RSS from /proc (the child's own figure); heap used,
// the heap's committed size, memory held outside it, event-loop delay p99 and open handles from
// its /metrics (prom-client's default metrics, src/metrics/metrics.ts, prefixed `idmint_`, read
// once a second); how much of RSS lies in V8's heap pages (smaps.ts); its CPU share since the last
// sample; and what the clients saw in the same window.
import { readFileSync } from 'node:fs';
import { procCpuSeconds } from '../../tools/cpu.js';
import type { Window } from './latency.js';
import type { LoadContext } from './load-context.js';
import { residentSplit } from './smaps.js';

export const KINDS = ['http single', 'http batch', 'ws take', 'udp get', 'grpc next', 'grpc take'] as const;

export interface Sample {
  /** Seconds since the load started. */
  readonly t: number;
  /** Seconds since the previous sample (the window of the figures below but those read at the sample). */
  readonly windowS: number;
  /** At the sample. */
  readonly rssMb: number;
  /** At the sample (smaps.ts): RSS in V8's heap pages, those pages mapped, and RSS with them counted whole. */
  readonly v8ResidentMb: number;
  readonly v8MappedMb: number;
  readonly wholeMb: number;
  /**
   * The old generation after the last full (major) collection: heap used less the young
   * generation (new space), at its lowest since prom-client's count of major collections last
   * went up. Between two of them V8 lets the heap grow (here to about twice what is alive) and
   * the young generation fills and empties many times a second, so a raw reading says more
   * about when the collector last ran than about what stays alive. NaN before the first one.
   */
  readonly heapMb: number;
  /**
   * V8's heap at the sample: the memory it has committed for its spaces (young generation, old
   * generation, code, large objects), touched or not. RSS counts only the pages touched, so
   * RSS can rise while this stays flat: pages the heap already holds being touched, not a heap
   * that grows.
   */
  readonly heapCommittedMb: number;
  /** Memory held by JavaScript objects outside V8's heap (Buffers, ArrayBuffers) at the sample. */
  readonly externalMb: number;
  /** Heap used: the lowest and the highest reading of the window. */
  readonly heapFloorMb: number;
  readonly heapPeakMb: number;
  /** Full collections in the window. */
  readonly majorGcs: number;
  /** Event-loop delay p99 of the worst second of the window (prom-client resets its histogram at each scrape). */
  readonly loopP99Ms: number;
  /** At the sample. */
  readonly handles: number;
  /** % of one core the server used in the window. */
  readonly cpu: number;
  /** Failed requests in the window. */
  readonly failed: number;
  readonly latency: Record<string, Window>;
}

/** VmRSS of a process, MB (2^20 bytes). */
export function rssMb(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(m[1]) / 1024;
}

/**
 * The value of a metric in a Prometheus text exposition: `labels` as written, e.g.
 * `{kind="major"}`; `absent` when it is not there (a count whose label was never seen).
 */
export function metricValue(text: string, name: string, labels = '', absent?: number): number {
  const m = new RegExp(`^${name}${labels.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text);
  if (!m && absent !== undefined) return absent;
  if (!m) throw new Error(`${name}${labels} is not on /metrics`);
  return Number(m[1]);
}

interface Reading {
  readonly heapMb: number;
  /** heapMb less the young generation. */
  readonly oldMb: number;
  readonly majorGcs: number;
  readonly loopP99Ms: number;
  readonly handles: number;
  readonly heapCommittedMb: number;
  readonly externalMb: number;
}

/** Reads the server once a second (read) and sums a window up into a sample (sample). */
export class Sampler {
  private readonly start = performance.now();
  private lastAt = performance.now();
  private lastCpu: number;
  private lastFailed = 0;
  private readings: Reading[] = [];
  /** Major collections counted at the last reading. */
  private majors: number | undefined;
  private majorsAtSample: number | undefined;
  /** The lowest old-generation reading since the last major collection. */
  private afterMajor = NaN;

  constructor(
    private readonly pid: number,
    private readonly ctx: LoadContext,
  ) {
    this.lastCpu = procCpuSeconds(pid);
  }

  async read(): Promise<void> {
    const res = await fetch(`${this.ctx.at.url}/metrics`, { signal: AbortSignal.timeout(10000) });
    if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
    const text = await res.text();
    const used = metricValue(text, 'idmint_nodejs_heap_size_used_bytes');
    const young =
      metricValue(text, 'idmint_nodejs_heap_space_size_used_bytes', '{space="new"}', 0) +
      metricValue(text, 'idmint_nodejs_heap_space_size_used_bytes', '{space="new_large_object"}', 0);
    const r: Reading = {
      heapMb: used / 2 ** 20,
      oldMb: (used - young) / 2 ** 20,
      majorGcs: metricValue(text, 'idmint_nodejs_gc_duration_seconds_count', '{kind="major"}', 0),
      loopP99Ms: metricValue(text, 'idmint_nodejs_eventloop_lag_p99_seconds') * 1000,
      handles: metricValue(text, 'idmint_nodejs_active_handles_total'),
      heapCommittedMb: metricValue(text, 'idmint_nodejs_heap_size_total_bytes') / 2 ** 20,
      externalMb: metricValue(text, 'idmint_nodejs_external_memory_bytes') / 2 ** 20,
    };
    if (this.majors !== undefined && r.majorGcs > this.majors) this.afterMajor = r.oldMb;
    else this.afterMajor = Math.min(this.afterMajor, r.oldMb);
    this.majors = r.majorGcs;
    this.majorsAtSample ??= r.majorGcs;
    this.readings.push(r);
  }

  /** A reading, then the window since the last sample. */
  async sample(): Promise<Sample> {
    await this.read();
    const now = performance.now();
    const cpu = procCpuSeconds(this.pid);
    const failed = this.ctx.failed();
    const r = this.readings;
    const split = residentSplit(this.pid);
    const s: Sample = {
      t: (now - this.start) / 1000,
      windowS: (now - this.lastAt) / 1000,
      rssMb: rssMb(this.pid),
      v8ResidentMb: split.v8ResidentMb,
      v8MappedMb: split.v8MappedMb,
      wholeMb: split.wholeMb,
      heapMb: this.afterMajor,
      heapFloorMb: Math.min(...r.map((x) => x.heapMb)),
      heapPeakMb: Math.max(...r.map((x) => x.heapMb)),
      majorGcs: this.majors! - this.majorsAtSample!,
      loopP99Ms: Math.max(...r.map((x) => x.loopP99Ms)),
      handles: r[r.length - 1].handles,
      heapCommittedMb: r[r.length - 1].heapCommittedMb,
      externalMb: r[r.length - 1].externalMb,
      cpu: ((cpu - this.lastCpu) / ((now - this.lastAt) / 1000)) * 100,
      failed: failed - this.lastFailed,
      latency: this.ctx.latency.take(KINDS),
    };
    this.readings = [];
    this.majorsAtSample = this.majors;
    this.lastAt = now;
    this.lastCpu = cpu;
    this.lastFailed = failed;
    return s;
  }
}
