// Hot-path metric types for prom-client registries. prom-client hashes the label object on
// every observation, even through a bound child; these keep one series object per label set
// and only build the exposition when /metrics is scraped (prom-client's registry formats it).
import type { Registry } from 'prom-client';

interface Value {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

export class HistogramSeries {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Record<string, string | number>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]) {
        this.counts[i]++;
        break;
      }
    }
    this.sum += value;
    this.count++;
  }
}

/** A labelled histogram whose series are bound once and observed without hashing. */
export class FastHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, HistogramSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as never);
  }

  /** The series of one label set; `key` identifies it (callers build it cheaply). */
  series_(key: string, labels: () => Record<string, string | number>): HistogramSeries {
    let series = this.series.get(key);
    if (!series) {
      series = new HistogramSeries(labels(), this.bounds);
      this.series.set(key, series);
    }
    return series;
  }

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Value[] }> {
    const values: Value[] = [];
    for (const series of this.series.values()) {
      let acc = 0;
      this.bounds.forEach((le, bucket) => {
        acc += series.counts[bucket];
        values.push({ labels: { ...series.labels, le }, value: acc, metricName: `${this.name}_bucket` });
      });
      values.push({ labels: { ...series.labels, le: '+Inf' }, value: series.count, metricName: `${this.name}_bucket` });
      values.push({ labels: series.labels, value: series.sum, metricName: `${this.name}_sum` });
      values.push({ labels: series.labels, value: series.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

/** A labelled counter kept as plain numbers per label set. */
export class FastCounter {
  readonly type = 'counter';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, { labels: Record<string, string | number>; value: number }>();

  constructor(
    readonly name: string,
    readonly help: string,
    registry: Registry,
  ) {
    registry.registerMetric(this as never);
  }

  add(key: string, labels: () => Record<string, string | number>, count: number): void {
    this.series_(key, labels).value += count;
  }

  /** The series of one label set, to keep and add to directly. */
  series_(key: string, labels: () => Record<string, string | number>): { value: number } {
    let series = this.series.get(key);
    if (!series) {
      series = { labels: labels(), value: 0 };
      this.series.set(key, series);
    }
    return series;
  }

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Value[] }> {
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values: [...this.series.values()].map((s) => ({ labels: s.labels, value: s.value })),
    };
  }
}
