// The replies of the idempotency-key scripts (idem-record-2.lua, idem-held-1.lua) decoded into
// types, as replies.ts does for the others: a status the script does not answer is an error.
import type { ScriptFile } from './lua.js';

/** What idem-record-2.lua did with an answer. */
export type RecordResult =
  /** Kept: the caller answers the IDs it sent. */
  | { readonly kind: 'recorded' }
  /** The key already had a record (fingerprint and encoded answer); nothing was written. */
  | { readonly kind: 'exists'; readonly fingerprint: string; readonly answer: string }
  /** The tag holds its most live keys; nothing was written; retryInMs: until the first expires. */
  | { readonly kind: 'full'; readonly retryInMs: number };

const fail = (script: ScriptFile, raw: unknown): Error => new Error(`${script}.lua answered ${JSON.stringify(raw)}, which is not one of its replies`);

/** A record's text, "<fingerprint>\n<answer>", as GET or the script gives it. */
export function splitRecord(text: string): { fingerprint: string; answer: string } {
  const nl = text.indexOf('\n');
  if (nl < 0) throw new Error('an idempotency record has no line break between its fingerprint and its answer');
  return { fingerprint: text.slice(0, nl), answer: text.slice(nl + 1) };
}

export function decodeRecord(raw: unknown): RecordResult {
  if (!Array.isArray(raw)) throw fail('idem-record-2', raw);
  if (raw[0] === 1 && raw.length === 1) return { kind: 'recorded' };
  if (raw[0] === 2 && typeof raw[1] === 'string') return { kind: 'exists', ...splitRecord(raw[1]) };
  if (raw[0] === 3 && typeof raw[1] === 'number') return { kind: 'full', retryInMs: raw[1] };
  throw fail('idem-record-2', raw);
}

export function decodeHeld(raw: unknown): number {
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 0) throw fail('idem-held-1', raw);
  return raw;
}
