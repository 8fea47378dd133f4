// Hot-path metric types for prom-client registries. prom-client hashes the label object on
// every observation, even through a bound child; these keep one series object per label set
// and only build the exposition when /metrics is scraped (prom-client's registry formats it).
// Series labelled with a tag are indexed by it, so a deleted tag's are found and dropped
// without a scan (forgetTag).
import type { Registry } from 'prom-client';

type Labels = Record<string, string | number>;

interface Value {
  labels: Labels;
  value: number;
  metricName?: string;
}

/** Series by key, and the keys of each tag's series (labels with a `tag`). */
class SeriesByTag<S extends { labels: Labels }> {
  readonly all = new Map<string, S>();
  private readonly keysOfTag = new Map<string, Set<string>>();

  /** Keeps a new label set's series, indexed by its tag; returns it. */
  add(key: string, series: S): S {
    this.all.set(key, series);
    const tag = series.labels.tag;
    if (tag !== undefined) {
      let keys = this.keysOfTag.get(String(tag));
      if (keys === undefined) this.keysOfTag.set(String(tag), (keys = new Set()));
      keys.add(key);
    }
    return series;
  }

  holdsTag(tag: string): boolean {
    return this.keysOfTag.has(tag);
  }

  /** Drops every series labelled with the tag; how many. */
  forgetTag(tag: string): number {
    const keys = this.keysOfTag.get(tag);
    if (keys === undefined) return 0;
    for (const key of keys) this.all.delete(key);
    this.keysOfTag.delete(tag);
    return keys.size;
  }
}

/** A metric whose series may carry a `tag` label. */
export interface TagLabelled {
  holdsTag(tag: string): boolean;
  /** Drops every series labelled with the tag; how many. */
  forgetTag(tag: string): number;
}

/** A label set's key where callers do not build one: its values in the order given. */
const keyOf = (labels: Labels): string => JSON.stringify(Object.values(labels));

export class HistogramSeries {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Labels,
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
export class FastHistogram implements TagLabelled {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new SeriesByTag<HistogramSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as never);
  }

  /** The series of one label set; `key` identifies it (callers build it cheaply). */
  series_(key: string, labels: () => Labels): HistogramSeries {
    return this.series.all.get(key) ?? this.series.add(key, new HistogramSeries(labels(), this.bounds));
  }

  /** One observation, for callers off the hot path (prom-client's Histogram.observe). */
  observe(labels: Labels, value: number): void {
    this.series_(keyOf(labels), () => labels).observe(value);
  }

  holdsTag(tag: string): boolean {
    return this.series.holdsTag(tag);
  }

  forgetTag(tag: string): number {
    return this.series.forgetTag(tag);
  }

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Value[] }> {
    const values: Value[] = [];
    for (const series of this.series.all.values()) {
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
export class FastCounter implements TagLabelled {
  readonly type = 'counter';
  readonly aggregator = 'sum';
  private readonly series = new SeriesByTag<{ labels: Labels; value: number }>();

  constructor(
    readonly name: string,
    readonly help: string,
    registry: Registry,
  ) {
    registry.registerMetric(this as never);
  }

  add(key: string, labels: () => Labels, count: number): void {
    this.series_(key, labels).value += count;
  }

  /** Adds to a label set's series, for callers off the hot path (prom-client's Counter.inc). */
  inc(labels: Labels, count = 1): void {
    this.add(keyOf(labels), () => labels, count);
  }

  /** The series of one label set, to keep and add to directly. */
  series_(key: string, labels: () => Labels): { value: number } {
    return this.series.all.get(key) ?? this.series.add(key, { labels: labels(), value: 0 });
  }

  holdsTag(tag: string): boolean {
    return this.series.holdsTag(tag);
  }

  forgetTag(tag: string): number {
    return this.series.forgetTag(tag);
  }

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Value[] }> {
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values: [...this.series.all.values()].map((s) => ({ labels: s.labels, value: s.value })),
    };
  }
}
