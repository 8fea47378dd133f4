// How long idmint's event loop was held over a span, read from its own /metrics: how late the
// loop ran, and how long garbage collection paused it.
//
// prom-client's default metrics sample the loop's delay (perf_hooks.monitorEventLoopDelay, a
// timer every 10 ms) and start a new histogram at each scrape. So a scrape at a case's start
// begins the span and one at its end gives the span's p99 and max. The histogram holds each
// interval between the timer's runs whole (idle, about 10 ms), so the sampling interval is taken
// off: what is left is how late the loop came back to the timer, how long a request arriving at
// that moment could have waited for it. The rest of a request's latency is outside the loop (the
// kernel, the load generator).
//
// Its garbage collection pauses (nodejs_gc_duration_seconds, every kind Node reports: scavenges
// of the young generation, the old generation's mark-compact, the start of its incremental
// marking, weak callbacks) are counted since the process started, so the span's pauses are those
// of its end less those of its start. A request that comes during a pause waits for its end,
// whatever else the process does. The steps of incremental marking V8 takes between them (with
// --single-threaded-gc, on the serving thread) are not reported one by one and are not in it: a
// span in which the old generation was marked held the loop longer than its pauses show.

/** prom-client's sampling interval of the loop (its eventLoopMonitoringPrecision default), ms. */
const SAMPLE_MS = 10;
/** prom-client's histogram of garbage collection pauses, by kind. */
const GC = 'idmint_nodejs_gc_duration_seconds';

/** The loop's delay over the span since the last scrape of `url`/metrics, ms. */
export interface LoopDelay {
  readonly p99: number;
  readonly max: number;
}

/** Garbage collection pauses of a process since it started. */
export interface GcTotals {
  readonly count: number;
  readonly seconds: number;
}

/** Garbage collection pauses over a span: how many a second and how long they held the loop, ms a second. */
export interface GcPauses {
  readonly perS: number;
  readonly msPerS: number;
}

/** What a scrape of idmint's /metrics tells of its loop. */
export interface LoopScrape {
  /** The loop's delay since the scrape before. */
  readonly delay: LoopDelay;
  /** Its garbage collection pauses since the process started. */
  readonly gc: GcTotals;
}

/** Scrapes `url`/metrics: the loop's delay since the scrape before, and its pauses so far. */
export async function scrapeLoop(url: string): Promise<LoopScrape> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return readLoop(text, url);
}

/** The loop's delay and its pauses so far from the text of a /metrics scrape (of `url`, for errors). */
export function readLoop(text: string, url: string): LoopScrape {
  const lines = text.split('\n');
  /** The values of metric `name`'s samples, with or without labels. */
  const samples = (name: string): number[] =>
    lines.filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`)).map(valueOf);
  const seconds = (name: string): number => {
    const [value] = samples(name);
    if (value === undefined) throw new Error(`${url}/metrics has no ${name}`);
    return value;
  };
  // A histogram shows no sample of a kind before its first pause: with none, none was made.
  const summed = (histogram: string, name: string): number => {
    if (!lines.includes(`# TYPE ${histogram} histogram`)) throw new Error(`${url}/metrics has no ${histogram}`);
    return samples(name).reduce((sum, v) => sum + v, 0);
  };
  return {
    delay: {
      p99: Math.max(0, seconds('idmint_nodejs_eventloop_lag_p99_seconds') * 1000 - SAMPLE_MS),
      max: Math.max(0, seconds('idmint_nodejs_eventloop_lag_max_seconds') * 1000 - SAMPLE_MS),
    },
    gc: {
      count: summed(GC, `${GC}_count`),
      seconds: summed(GC, `${GC}_sum`),
    },
  };
}

/** The pauses between two scrapes `wallS` seconds apart. */
export function pausesBetween(start: GcTotals, end: GcTotals, wallS: number): GcPauses {
  return { perS: (end.count - start.count) / wallS, msPerS: ((end.seconds - start.seconds) * 1000) / wallS };
}

const valueOf = (line: string): number => Number(line.slice(line.lastIndexOf(' ') + 1));
