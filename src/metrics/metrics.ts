// Prometheus metrics of one process (prom-client, a registry of its own). The request path
// only increments pre-bound children; everything that needs Redis or MySQL is read when
// /metrics is scraped.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { FastCounter, FastHistogram, type TagLabelled } from './fast-metrics.js';
import { registerGrpcTakeMetrics, type GrpcTakeObserver } from './grpc-take-metrics.js';
import { registerIdempotencyMetrics, type IdempotencyCounters } from './idempotency-metrics.js';
import { registerSourceLimitMetrics, type SourceLimitCounter } from './source-limit-metrics.js';

export interface ScrapeSources {
  /** Remaining IDs in the current segment per tag (from Redis), read at scrape time. */
  segmentRemaining?: () => Promise<{ tag: string; remaining: number }[]>;
  /** BullMQ job counts per queue and state. */
  queueDepths?: () => Promise<{ queue: string; state: string; count: number }[]>;
  /** Lease state of this process: held leases and lifetime event counts. */
  leases?: () => { held: { bits: number; valid: boolean }[]; events: Record<string, number> };
  /** Clock events of the snowflake generators. */
  clock?: () => { backwards: number; waits: number };
  /** Whether each Redis server this process uses answers ("default" and REDIS_URLS). */
  redisUp?: () => Promise<{ server: string; up: boolean }[]>;
}

export class Metrics {
  readonly registry = new Registry();
  private readonly issued: FastCounter;
  private readonly takes: FastCounter;
  private readonly httpDuration: FastHistogram;
  private readonly grpcDuration: FastHistogram;
  readonly refillDuration: Histogram<'result'>;
  readonly segmentSize: FastHistogram;
  readonly refillWaits: FastCounter;
  readonly errors: Counter<'code'>;
  readonly adminAuthFailures: Counter<'transport'>;
  readonly allocations: FastCounter;
  readonly redisReplaced: FastCounter;
  readonly connectionRestarts: Counter<'server' | 'role'>;
  readonly counterRegressions: FastCounter;
  readonly idempotency: IdempotencyCounters;
  readonly grpcTakes: GrpcTakeObserver;
  /** idmint_source_limited_total: requests refused or dropped for their source's rate (api/source-limits.ts). */
  readonly sourceLimited: SourceLimitCounter;
  private sources: ScrapeSources = {};
  /** Every metric whose series are labelled by tag. */
  private readonly tagged: readonly TagLabelled[];

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    const registers = [this.registry];
    if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry, prefix: 'idmint_' });
    this.issued = new FastCounter('idmint_ids_issued_total', 'IDs handed out, per tag and mode', this.registry);
    this.takes = new FastCounter(
      'idmint_takes_total',
      'Redis takes sent by the coalescers of this process (the requests per take show the coalescing), per tag',
      this.registry,
    );
    this.httpDuration = new FastHistogram(
      'idmint_http_request_duration_seconds',
      'HTTP request latency per route',
      [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 3],
      this.registry,
    );
    this.grpcDuration = new FastHistogram(
      'idmint_grpc_request_duration_seconds',
      'gRPC call latency per method and status',
      [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 3],
      this.registry,
    );
    this.refillDuration = new Histogram({
      name: 'idmint_refill_duration_seconds',
      help: 'Refill jobs: allocate in MySQL and install in Redis',
      labelNames: ['result'],
      registers,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
    });
    this.segmentSize = new FastHistogram(
      'idmint_segment_size',
      'Size of allocated segments',
      [10, 100, 1000, 10_000, 100_000, 1_000_000, 10_000_000],
      this.registry,
    );
    this.allocations = new FastCounter('idmint_segments_allocated_total', 'Segments allocated in MySQL', this.registry);
    this.refillWaits = new FastCounter(
      'idmint_refill_waits_total',
      'Times requests had to wait for a refill (cold or dry tag)',
      this.registry,
    );
    this.redisReplaced = new FastCounter(
      'idmint_redis_instance_changes_total',
      'Segment hashes found written by another Redis instance (restart from a snapshot, failover) and abandoned',
      this.registry,
    );
    this.connectionRestarts = new Counter({
      name: 'idmint_connection_restarts_total',
      registers,
      labelNames: ['server', 'role'],
      help: 'Redis connections that ended by themselves (ioredis gave up on them) and are opened again, per server and role; server="mysql",role="pool": the MySQL pool replaced after it stopped handing out connections',
    });
    this.counterRegressions = new FastCounter(
      'idmint_counter_regressions_total',
      'MySQL found behind what Redis holds (backup restore, lagging failover) and raised at once; kind: segment, rule, worker_space',
      this.registry,
    );
    const idempotency = registerIdempotencyMetrics(this.registry);
    this.idempotency = idempotency.counters;
    this.tagged = [
      this.issued,
      this.takes,
      this.segmentSize,
      this.allocations,
      this.refillWaits,
      this.redisReplaced,
      this.counterRegressions,
      ...idempotency.tagged,
    ];
    this.grpcTakes = registerGrpcTakeMetrics(this.registry);
    this.sourceLimited = registerSourceLimitMetrics(this.registry);
    this.errors = new Counter({
      name: 'idmint_errors_total',
      help: 'Refused and failed requests by transport (http, leaf, tinyid, grpc, stream, udp) and idmint error code',
      labelNames: ['transport', 'code'],
      registers,
    });

    this.adminAuthFailures = new Counter({
      name: 'idmint_admin_auth_failures_total',
      help: 'Admin or viewer sign-ins refused for a wrong token (one sent that is neither), by transport',
      labelNames: ['transport'],
      registers,
    });

    const self = this;
    new Gauge({
      name: 'idmint_segment_remaining',
      help: 'IDs left in the current segment per tag (Redis)',
      labelNames: ['tag'],
      registers,
      // Read from Redis, the same in every process: several processes report it once.
      aggregator: 'max',
      async collect() {
        this.reset();
        for (const segment of (await self.sources.segmentRemaining?.().catch(() => [])) ?? [])
          this.set({ tag: segment.tag }, segment.remaining);
      },
    });
    new Gauge({
      name: 'idmint_queue_jobs',
      help: 'BullMQ jobs per queue and state',
      labelNames: ['queue', 'state'],
      registers,
      aggregator: 'max',
      async collect() {
        this.reset();
        for (const depth of (await self.sources.queueDepths?.().catch(() => [])) ?? [])
          this.set({ queue: depth.queue, state: depth.state }, depth.count);
      },
    });
    new Gauge({
      name: 'idmint_lease_valid',
      help: 'Worker-id leases of this process (1 valid, 0 lapsed) per worker-id width',
      labelNames: ['worker_bits'],
      registers,
      collect() {
        this.reset();
        for (const lease of self.sources.leases?.().held ?? [])
          this.set({ worker_bits: lease.bits }, lease.valid ? 1 : 0);
      },
    });
    new Gauge({
      name: 'idmint_lease_events',
      help: 'Lease events of this process since start (acquired, renewed, lost, exhausted, rescheduled, janitor_rescheduled)',
      labelNames: ['event'],
      registers,
      collect() {
        this.reset();
        for (const [event, count] of Object.entries(self.sources.leases?.().events ?? {})) this.set({ event }, count);
      },
    });
    new Gauge({
      name: 'idmint_redis_up',
      help: 'Redis servers of this process (default and REDIS_URLS): 1 answers, 0 down',
      labelNames: ['server'],
      registers,
      // Each process has its own connections: a server is up only if every process reaches it.
      aggregator: 'min',
      async collect() {
        this.reset();
        for (const state of (await self.sources.redisUp?.().catch(() => [])) ?? [])
          this.set({ server: state.server }, state.up ? 1 : 0);
      },
    });
    new Gauge({
      name: 'idmint_clock_events',
      help: 'Snowflake clock events since start (backwards: refused; waits: waited out)',
      labelNames: ['event'],
      registers,
      collect() {
        const clock = self.sources.clock?.();
        if (clock) {
          this.set({ event: 'backwards' }, clock.backwards);
          this.set({ event: 'waits' }, clock.waits);
        }
      },
    });
  }

  /** Wires what is read at scrape time (set once the runtime exists). */
  scrapeFrom(sources: ScrapeSources): void {
    this.sources = sources;
  }

  /** One HTTP request. */
  observeHttp(route: string, method: string, status: number, seconds: number): void {
    this.httpDuration.series_(`${route} ${method} ${status}`, () => ({ route, method, status })).observe(seconds);
  }

  /** One gRPC call, by method (Next, Take, Decode) and status name (OK, NOT_FOUND...). */
  observeGrpc(method: string, code: string, seconds: number): void {
    this.grpcSeries(method, code).observe(seconds);
  }

  /** The histogram series of one (gRPC method, status), for callers that keep it. */
  grpcSeries(method: string, code: string): { observe(seconds: number): void } {
    return this.grpcDuration.series_(`${method} ${code}`, () => ({ method, code }));
  }

  countIssued(tag: string, mode: string, count: number): void {
    this.issued.add(`${mode} ${tag}`, () => ({ tag, mode }), count);
  }

  /** The histogram series of one (route, method, status), for callers that keep it. */
  httpSeries(route: string, method: string, status: number): { observe(seconds: number): void } {
    return this.httpDuration.series_(`${route} ${method} ${status}`, () => ({ route, method, status }));
  }

  /** The Redis-takes counter of one tag, for a coalescer to keep. */
  takesSeries(tag: string): { value: number } {
    return this.takes.series_(tag, () => ({ tag }));
  }

  /** Whether this process holds a series labelled with the tag (it served it, or ran its refills). */
  holdsTag(tag: string): boolean {
    return this.tagged.some((metric) => metric.holdsTag(tag));
  }

  /** Drops every series labelled with the tag (a deleted tag's); how many. */
  forgetTag(tag: string): number {
    return this.tagged.reduce((sum, metric) => sum + metric.forgetTag(tag), 0);
  }

  /** The issued-IDs counter of one (tag, mode), for callers that keep it. */
  issuedSeries(tag: string, mode: string): { value: number } {
    return this.issued.series_(`${mode} ${tag}`, () => ({ tag, mode }));
  }
}
