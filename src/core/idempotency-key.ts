// The pure rules of idempotency keys: which keys and counts a keyed request may carry, the
// fingerprint that tells a retry of a request from a different request under the same key, and
// the compact text an answer is kept as in Redis (a keyed answer of a counter tag is a few runs
// of evenly spaced integers, kept as runs rather than as up to 1000 decimal strings).

/** Longest idempotency key, in bytes (every byte a visible ASCII character). */
export const MAX_KEY_BYTES = 255;
/** Most IDs one keyed request may ask for: its answer is kept for the whole retention. */
export const MAX_KEYED_COUNT = 1000;

const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

/** Why `key` cannot be an idempotency key, or undefined when it can. */
export function keyProblem(key: string): string | undefined {
  if (key.length === 0) return 'the idempotency key is empty: send 1 to 255 visible ASCII characters';
  if (!VISIBLE_ASCII.test(key))
    return 'the idempotency key must be visible ASCII characters only (0x21 to 0x7E: no space, no control or non-ASCII character)';
  if (key.length > MAX_KEY_BYTES)
    return `the idempotency key is ${key.length} bytes long; at most ${MAX_KEY_BYTES} are accepted`;
  return undefined;
}

/** Why a keyed request cannot ask for `count` IDs, or undefined when it can. */
export function keyedCountProblem(count: number): string | undefined {
  if (!Number.isInteger(count) || count < 1) return `a request asks for at least 1 ID, got ${count}`;
  if (count > MAX_KEYED_COUNT)
    return `a request with an idempotency key asks for at most ${MAX_KEYED_COUNT} IDs (its answer is kept until the key expires), got ${count}; split it into several keyed requests`;
  return undefined;
}

/** What makes two requests under one key the same request (the tag is part of the key). */
export interface KeyedRequest {
  readonly count: number;
  /**
   * The form of the answer the caller gives (e.g. 'id' for one ID, 'ids' for a list): a retry
   * through another route that answers differently is a different request.
   */
  readonly shape: string;
  /** The shard key of a sharded tag. */
  readonly key?: string;
  /** A rule's app name and salt. */
  readonly app?: string;
  readonly salt?: string;
}

const FIELDS = ['count', 'shape', 'key', 'app', 'salt'] as const;

/**
 * The fingerprint of a keyed request: its fields as canonical JSON (absent fields as null), so
 * that it is exact (no two requests share one) and a refusal can name what differs. Never
 * holds a raw line break (JSON escapes them), which the stored record relies on.
 */
export function fingerprintOf(request: KeyedRequest): string {
  return JSON.stringify(FIELDS.map((f) => request[f] ?? null));
}

/** The fields in which the requests of two fingerprints differ, e.g. "count 3, not 5". */
export function fingerprintDifference(now: string, before: string): string {
  let current: unknown[];
  let earlier: unknown[];
  try {
    current = JSON.parse(now) as unknown[];
    earlier = JSON.parse(before) as unknown[];
  } catch {
    return 'a different request';
  }
  if (!Array.isArray(current) || !Array.isArray(earlier)) return 'a different request';
  const diffs = FIELDS.flatMap((f, i) =>
    JSON.stringify(current[i] ?? null) === JSON.stringify(earlier[i] ?? null)
      ? []
      : [`${f} ${show(current[i])}, not ${show(earlier[i])}`],
  );
  return diffs.length > 0 ? diffs.join('; ') : 'a different request';
}

const show = (v: unknown): string => (v === null || v === undefined ? 'none' : JSON.stringify(v));

const DECIMAL = /^(0|[1-9][0-9]*)$/;

/** A run of evenly spaced integer IDs: first, step, how many. */
type Run = [first: string, step: string, count: number];

/**
 * An answer as the text kept in Redis: a JSON array of IDs, where each run of at least three
 * evenly increasing decimal IDs is written [first, step, count]; decodeIds gives the same strings back.
 */
export function encodeIds(ids: readonly string[]): string {
  const out: (string | Run)[] = [];
  let start = 0;
  while (start < ids.length) {
    const end = runEnd(ids, start);
    if (end - start >= 3) {
      out.push([ids[start], String(BigInt(ids[start + 1]) - BigInt(ids[start])), end - start]);
      start = end;
    } else out.push(ids[start++]);
  }
  return JSON.stringify(out);
}

/** The end (exclusive) of the longest run of evenly increasing decimal IDs starting at `start`. */
function runEnd(ids: readonly string[], start: number): number {
  if (start + 1 >= ids.length || !DECIMAL.test(ids[start]) || !DECIMAL.test(ids[start + 1])) return start + 1;
  const step = BigInt(ids[start + 1]) - BigInt(ids[start]);
  if (step <= 0n) return start + 1;
  let prev = BigInt(ids[start + 1]);
  let end = start + 2;
  while (end < ids.length && DECIMAL.test(ids[end]) && BigInt(ids[end]) - prev === step) prev = BigInt(ids[end++]);
  return end;
}

/** The IDs of a text encodeIds wrote; throws on anything else. */
export function decodeIds(text: string): string[] {
  const parsed: unknown = JSON.parse(text);
  if (!Array.isArray(parsed)) throw new Error('a kept answer is not a list');
  const ids: string[] = [];
  for (const item of parsed) {
    if (typeof item === 'string') ids.push(item);
    else if (
      Array.isArray(item) &&
      item.length === 3 &&
      DECIMAL.test(String(item[0])) &&
      DECIMAL.test(String(item[1])) &&
      Number.isInteger(item[2]) &&
      item[2] >= 1 &&
      item[2] <= MAX_KEYED_COUNT
    ) {
      const step = BigInt(item[1] as string);
      let id = BigInt(item[0] as string);
      for (let k = 0; k < (item[2] as number); k++, id += step) ids.push(String(id));
    } else throw new Error(`a kept answer holds ${JSON.stringify(item)}, which is neither an ID nor a run`);
  }
  return ids;
}
