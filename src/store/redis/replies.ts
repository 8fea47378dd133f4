// The replies of the Lua scripts in ./commands, decoded into types: every status code a script
// answers maps through one table per script (the codes and their meaning are in each script's
// header), and a code that is not in the table is an error, never a silent undefined.
import type { Range } from '../../core/ranges.js';
import type { ScriptFile } from './lua.js';

/** A script's status codes and what each means. */
type Codes<T> = Readonly<Record<number, T>>;

function decode<T>(script: ScriptFile, codes: Codes<T>, raw: unknown): T {
  // Lua numbers come back as Redis integers, which ioredis answers as numbers.
  const decoded = typeof raw === 'number' ? codes[raw] : undefined;
  if (decoded === undefined)
    throw new Error(`${script}.lua answered ${JSON.stringify(raw)}, which is not one of its replies`);
  return decoded;
}

// ---- take-2.lua

/**
 * 'replaced': the hash came from another Redis instance and was started afresh, as 'cold'.
 * 'moved': the tag moved to another Redis; nothing was given (read the definition again).
 */
export type TakeStatus = 'ok' | 'dry' | 'cold' | 'exhausted' | 'replaced' | 'moved';
const TAKE: Codes<TakeStatus> = ['ok', 'dry', 'cold', 'exhausted', 'replaced', 'moved'];

export interface TakeResult {
  readonly status: TakeStatus;
  /**
   * The hash's gen and current segment number, for refill requests: given whenever
   * refillWanted is true or status is not 'ok'; a steady-state 'ok' (nothing due) carries ''
   * and -1.
   */
  readonly gen: string;
  readonly seg: number;
  readonly refillWanted: boolean;
  readonly ranges: Range[];
  /** status 'exhausted': IDs Redis still holds (fewer than asked; none were given). */
  readonly avail?: number;
}

/** take's reply to a request for `count` IDs. */
export function decodeTake(raw: unknown, count: number): TakeResult {
  // The steady-state reply: the first of `count` consecutive IDs, nothing else due.
  if (typeof raw === 'number')
    return { status: 'ok', gen: '', seg: -1, refillWanted: false, ranges: [[raw, raw + count - 1]] };
  const reply = raw as (string | number)[];
  const status = decode('take-2', TAKE, reply[0]);
  const head = { status, gen: String(reply[1]), seg: Number(reply[2]), refillWanted: Number(reply[3]) === 1 };
  if (status === 'exhausted') return { ...head, ranges: [], avail: Number(reply[4]) };
  const ranges: Range[] = [];
  for (let i = 4; i + 1 < reply.length; i += 2) ranges.push([Number(reply[i]), Number(reply[i + 1])]);
  return { ...head, ranges };
}

// ---- install-2.lua

export type InstallResult = 'current' | 'next' | 'reset' | 'next-present' | 'stale';
const INSTALL: Codes<InstallResult> = { 1: 'current', 2: 'next', [-1]: 'reset', [-2]: 'next-present', [-3]: 'stale' };

export const decodeInstall = (raw: unknown): InstallResult => decode('install-2', INSTALL, raw);

// ---- exhaust-1.lua

/** 'stale': the hash is gone or carries another gen (nothing was marked). */
export type ExhaustResult = 'marked' | 'stale';
const EXHAUST: Codes<ExhaustResult> = { 1: 'marked', [-1]: 'stale' };

export const decodeExhaust = (raw: unknown): ExhaustResult => decode('exhaust-1', EXHAUST, raw);

// ---- prime-2.lua

/** 'present': the hash exists already; 'moved': the tag's epoch is retired on this Redis. */
export type PrimeResult = 'created' | 'present' | 'moved';
const PRIME: Codes<PrimeResult> = { 1: 'created', 0: 'present', [-1]: 'moved' };

export const decodePrime = (raw: unknown): PrimeResult => decode('prime-2', PRIME, raw);

// ---- lease-acquire-1.lua

/** A worker id leased, or none free within the probes (the space is exhausted). */
export type Acquired =
  | {
      readonly kind: 'leased';
      readonly workerId: number;
      /** The id's last timestamp: its holder issues strictly after max(lastMs, guardMs). */
      readonly lastMs: number;
      readonly guardMs: number;
      /** This call created the space's state (first use, or Redis lost its data). */
      readonly fresh: boolean;
    }
  | { readonly kind: 'exhausted'; readonly guardMs: number; readonly fresh: boolean };

export function decodeAcquire(raw: unknown): Acquired {
  const [id, last, guard, fresh] = (raw as number[]).map(Number);
  if (id < 0) return { kind: 'exhausted', guardMs: guard, fresh: fresh === 1 };
  return { kind: 'leased', workerId: id, lastMs: last, guardMs: guard, fresh: fresh === 1 };
}

// ---- lease-renew-1.lua

/** 'expired': the lease key is gone (acquire again); 'taken': another holder has the id. */
export type RenewResult = 'extended' | 'expired' | 'taken';
const RENEW: Codes<RenewResult> = { 1: 'extended', 0: 'expired', [-1]: 'taken' };

export const decodeRenew = (raw: unknown): RenewResult => decode('lease-renew-1', RENEW, raw);

// ---- lease-release-1.lua

/** 'not-ours': the lease was no longer this holder's; nothing changed. */
export type ReleaseResult = 'released' | 'not-ours';
const RELEASE: Codes<ReleaseResult> = { 1: 'released', 0: 'not-ours' };

export const decodeRelease = (raw: unknown): ReleaseResult => decode('lease-release-1', RELEASE, raw);
