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
export function layoutProblems(l: SnowflakeLayout): string[] {
  const p: string[] = [];
  const bits = (name: string, v: number, min: number, max: number) => {
    if (!Number.isInteger(v) || v < min || v > max) p.push(`${name} must be an integer from ${min} to ${max}`);
  };
  bits('time_bits', l.timeBits, 20, 50);
  bits('worker_bits', l.workerBits, 1, 22);
  bits('seq_bits', l.seqBits, 1, 22);
  if (l.timeBits + l.workerBits + l.seqBits > 63) p.push('time_bits + worker_bits + seq_bits must not exceed 63');
  if (l.unit !== 'ms' && l.unit !== 's') p.push('time_unit must be "ms" or "s"');
  if (!Number.isSafeInteger(l.epochMs) || l.epochMs < 0) p.push('epoch must be a time at or after 1970-01-01');
  return p;
}

/** The first instant the layout can no longer represent. */
export function runsOutAt(l: SnowflakeLayout): Date {
  return new Date(l.epochMs + 2 ** l.timeBits * unitMs(l.unit));
}

export function maxWorkers(l: SnowflakeLayout): number {
  return 2 ** l.workerBits;
}

export function maxSeq(l: SnowflakeLayout): number {
  return 2 ** l.seqBits - 1;
}

/** Time in layout units since the layout's epoch, for a wall-clock time in ms. */
export function toUnits(l: SnowflakeLayout, nowMs: number): number {
  return Math.floor((nowMs - l.epochMs) / unitMs(l.unit));
}

export function encode(l: SnowflakeLayout, time: number, worker: number, seq: number): bigint {
  return (BigInt(time) << BigInt(l.workerBits + l.seqBits)) | (BigInt(worker) << BigInt(l.seqBits)) | BigInt(seq);
}

export interface SnowflakeParts {
  /** Layout units since the epoch. */
  readonly time: number;
  readonly timestamp: Date;
  readonly workerId: number;
  readonly sequence: number;
}

export function decode(l: SnowflakeLayout, id: bigint): SnowflakeParts {
  const time = Number(id >> BigInt(l.workerBits + l.seqBits));
  return {
    time,
    timestamp: new Date(l.epochMs + time * unitMs(l.unit)),
    workerId: Number((id >> BigInt(l.seqBits)) & ((1n << BigInt(l.workerBits)) - 1n)),
    sequence: Number(id & ((1n << BigInt(l.seqBits)) - 1n)),
  };
}
