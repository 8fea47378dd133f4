// The replies of the idempotency-key scripts (idem-claim-3.lua, idem-takes-4.lua,
// idem-record-3.lua, idem-release-3.lua, idem-held-1.lua) decoded into types, as replies.ts does for the others: a
// status the script does not answer is an error.
import type { ScriptFile } from './lua.js';

/** A key's kept answer: the fingerprint of the request it answered and the encoded IDs. */
export interface KeptAnswer {
  readonly fingerprint: string;
  readonly answer: string;
}

/** A kept answer as a script found it, with how long its record still lives (ms; -1: no expiry, never). */
export type FoundAnswer = KeptAnswer & { readonly ttlMs: number };

/** What idem-claim-3.lua found for a key. */
export type ClaimResult =
  /** Claimed for the caller: it takes its IDs, then records or releases. */
  | { readonly kind: 'claimed' }
  /** The key has an answer; nothing was written. */
  | ({ readonly kind: 'answered' } & FoundAnswer)
  /** Another request holds a claim on the key (its fingerprint) for at most ttlMs more. */
  | { readonly kind: 'busy'; readonly fingerprint: string; readonly ttlMs: number }
  /** The tag holds its most live keys; nothing was written; retryInMs: until the first expires. */
  | { readonly kind: 'full'; readonly retryInMs: number }
  /**
   * The key's charge would take the tag's keys past their most bytes; nothing was written; retryInMs: until enough
   * expire.
   */
  | { readonly kind: 'full-bytes'; readonly retryInMs: number };

/**
 * What idem-takes-4.lua did for one request: what idem-claim-3.lua finds, or the IDs taken and kept as the key's
 * answer.
 */
export type ClaimOrTakeResult =
  | ClaimResult
  /** Taken and kept as the key's answer: counter values first .. first + n - 1. */
  | { readonly kind: 'taken'; readonly first: number };

/** What idem-record-3.lua did with an answer. */
export type RecordResult =
  /** Kept: the caller answers the IDs it sent. */
  | { readonly kind: 'recorded' }
  /** The key has another answer; nothing was written. */
  | ({ readonly kind: 'answered' } & FoundAnswer)
  /** Another request claimed the key after the caller's claim expired; nothing was written. */
  | { readonly kind: 'busy'; readonly fingerprint: string; readonly ttlMs: number };

const fail = (script: ScriptFile, raw: unknown): Error =>
  new Error(`${script}.lua answered ${JSON.stringify(raw)}, which is not one of its replies`);

/** A record's text, "<fingerprint>\n<answer>", as GET or the scripts give it. */
export function splitRecord(text: string): KeptAnswer {
  const nl = text.indexOf('\n');
  if (nl < 0) throw new Error('an idempotency record has no line break between its fingerprint and its answer');
  return { fingerprint: text.slice(0, nl), answer: text.slice(nl + 1) };
}

/** The replies both scripts share: {2, record, ms} and {4, fingerprint, ms}; undefined for any other. */
function shared(raw: unknown[]): Exclude<RecordResult, { kind: 'recorded' }> | undefined {
  if (raw[0] === 2 && raw.length === 3 && typeof raw[1] === 'string' && typeof raw[2] === 'number')
    return { kind: 'answered', ...splitRecord(raw[1]), ttlMs: raw[2] };
  if (raw[0] === 4 && raw.length === 3 && typeof raw[1] === 'string' && typeof raw[2] === 'number')
    return { kind: 'busy', fingerprint: raw[1], ttlMs: raw[2] };
  return undefined;
}

export function decodeClaim(raw: unknown): ClaimResult {
  if (!Array.isArray(raw)) throw fail('idem-claim-3', raw);
  if (raw[0] === 1 && raw.length === 1) return { kind: 'claimed' };
  if (raw[0] === 3 && raw.length === 2 && typeof raw[1] === 'number') return { kind: 'full', retryInMs: raw[1] };
  if (raw[0] === 5 && raw.length === 2 && typeof raw[1] === 'number') return { kind: 'full-bytes', retryInMs: raw[1] };
  return shared(raw) ?? failWith('idem-claim-3', raw);
}

/** idem-takes-4.lua's replies, one per request sent (`count`). */
export function decodeClaimsOrTakes(raw: unknown, count: number): ClaimOrTakeResult[] {
  if (!Array.isArray(raw) || raw.length !== count) throw fail('idem-takes-4', raw);
  return raw.map((one: unknown) => {
    if (Array.isArray(one) && one[0] === 6 && one.length === 2 && Number.isSafeInteger(one[1]))
      return { kind: 'taken', first: one[1] as number };
    try {
      return decodeClaim(one);
    } catch {
      throw fail('idem-takes-4', raw);
    }
  });
}

export function decodeRecord(raw: unknown): RecordResult {
  if (!Array.isArray(raw)) throw fail('idem-record-3', raw);
  if (raw[0] === 1 && raw.length === 1) return { kind: 'recorded' };
  return shared(raw) ?? failWith('idem-record-3', raw);
}

export function decodeUnclaim(raw: unknown): boolean {
  if (raw !== 0 && raw !== 1) throw fail('idem-release-3', raw);
  return raw === 1;
}

export function decodeHeld(raw: unknown): number {
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 0) throw fail('idem-held-1', raw);
  return raw;
}

function failWith(script: ScriptFile, raw: unknown): never {
  throw fail(script, raw);
}
