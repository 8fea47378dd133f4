// Snowflake layouts: how many bits an ID gives to time, worker id and sequence, in which time
// unit, from which epoch. The sign bit is never used, so IDs are positive signed 64-bit
// integers; the JS-safe preset keeps every ID below 2^53.

export type TimeUnit = 'ms' | 's';

export interface SnowflakeLayout {
  /** Epoch in milliseconds since 1970 (UTC). */
  readonly epochMs: number;
  readonly unit: TimeUnit;
  readonly timeBits: number;
  readonly workerBits: number;
  readonly seqBits: number;
}

/** 2020-01-01T00:00:00Z: recent enough to leave the whole time range ahead. */
export const DEFAULT_EPOCH_MS = Date.UTC(2020, 0, 1);

export const PRESETS = {
  /** Twitter's layout: 41-bit milliseconds, 10-bit worker, 12-bit sequence. */
  snowflake: { epochMs: DEFAULT_EPOCH_MS, unit: 'ms', timeBits: 41, workerBits: 10, seqBits: 12 },
  /** Baidu uid-generator's layout: 28-bit seconds, 22-bit worker, 13-bit sequence. */
  uid: { epochMs: DEFAULT_EPOCH_MS, unit: 's', timeBits: 28, workerBits: 22, seqBits: 13 },
  /** IDs below 2^53 (exact as JavaScript numbers): 41-bit ms, 6-bit worker, 6-bit sequence. */
  jssafe: { epochMs: DEFAULT_EPOCH_MS, unit: 'ms', timeBits: 41, workerBits: 6, seqBits: 6 },
} as const satisfies Record<string, SnowflakeLayout>;

export type PresetName = keyof typeof PRESETS;

export const unitMs = (u: TimeUnit): number => (u === 'ms' ? 1 : 1000);

/** Problems with a layout, empty when it is usable. */
export function layoutProblems(layout: SnowflakeLayout): string[] {
  const problems: string[] = [];
  const bits = (name: string, value: number, min: number, max: number) => {
    if (!Number.isInteger(value) || value < min || value > max)
      problems.push(`${name} must be an integer from ${min} to ${max}`);
  };
  bits('time_bits', layout.timeBits, 20, 50);
  bits('worker_bits', layout.workerBits, 1, 22);
  bits('seq_bits', layout.seqBits, 1, 22);
  if (layout.timeBits + layout.workerBits + layout.seqBits > 63)
    problems.push('time_bits + worker_bits + seq_bits must not exceed 63');
  if (layout.unit !== 'ms' && layout.unit !== 's') problems.push('time_unit must be "ms" or "s"');
  if (!Number.isSafeInteger(layout.epochMs) || layout.epochMs < 0)
    problems.push('epoch must be a time at or after 1970-01-01');
  return problems;
}

/** The first instant the layout can no longer represent. */
export function runsOutAt(layout: SnowflakeLayout): Date {
  return new Date(layout.epochMs + 2 ** layout.timeBits * unitMs(layout.unit));
}

export function maxWorkers(layout: SnowflakeLayout): number {
  return 2 ** layout.workerBits;
}

export function maxSeq(layout: SnowflakeLayout): number {
  return 2 ** layout.seqBits - 1;
}

/** Time in layout units since the layout's epoch, for a wall-clock time in ms. */
export function toUnits(layout: SnowflakeLayout, nowMs: number): number {
  return Math.floor((nowMs - layout.epochMs) / unitMs(layout.unit));
}

export function encode(layout: SnowflakeLayout, time: number, worker: number, seq: number): bigint {
  return (
    (BigInt(time) << BigInt(layout.workerBits + layout.seqBits)) |
    (BigInt(worker) << BigInt(layout.seqBits)) |
    BigInt(seq)
  );
}

export interface SnowflakeParts {
  /** Layout units since the epoch. */
  readonly time: number;
  readonly timestamp: Date;
  readonly workerId: number;
  readonly sequence: number;
}

export function decode(layout: SnowflakeLayout, id: bigint): SnowflakeParts {
  const time = Number(id >> BigInt(layout.workerBits + layout.seqBits));
  return {
    time,
    timestamp: new Date(layout.epochMs + time * unitMs(layout.unit)),
    workerId: Number((id >> BigInt(layout.seqBits)) & ((1n << BigInt(layout.workerBits)) - 1n)),
    sequence: Number(id & ((1n << BigInt(layout.seqBits)) - 1n)),
  };
}
