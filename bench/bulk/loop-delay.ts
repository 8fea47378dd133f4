// How late idmint's event loop ran over a span, read from its own /metrics: prom-client's
// default metrics sample the loop's delay (perf_hooks.monitorEventLoopDelay, a timer every
// 10 ms) and start a new histogram at each scrape. So a scrape at a case's start begins the
// span and one at its end gives the span's p99 and max. The histogram holds each interval
// between the timer's runs whole (idle, about 10 ms), so the sampling interval is taken off:
// what is left is how late the loop came back to the timer, how long a request arriving at that
// moment could have waited for it. The rest of a request's latency is outside
// the loop (the kernel, the load generator).

/** prom-client's sampling interval of the loop (its eventLoopMonitoringPrecision default), ms. */
const SAMPLE_MS = 10;

/** The loop's delay over the span since the last scrape of `url`/metrics, ms. */
export interface LoopDelay {
  readonly p99: number;
  readonly max: number;
}

/** Scrapes `url`/metrics and returns the loop's delay since the scrape before. */
export async function loopDelay(url: string): Promise<LoopDelay> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const seconds = (name: string): number => {
    const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
    if (line === undefined) throw new Error(`${url}/metrics has no ${name}`);
    return Number(line.slice(line.lastIndexOf(' ') + 1));
  };
  return {
    p99: Math.max(0, seconds('idmint_nodejs_eventloop_lag_p99_seconds') * 1000 - SAMPLE_MS),
    max: Math.max(0, seconds('idmint_nodejs_eventloop_lag_max_seconds') * 1000 - SAMPLE_MS),
  };
}
