// Reading and checking what idmint answers, for the tests: the IDs of an answer that gives some
// one by one and some as ranges (the websocket stream's takes, gRPC's Take blocks), Tinyid's
// nextSegmentIdSimple text, /readyz, and a promise that must fail with an error code.
import assert from 'node:assert/strict';
import type { TinyidSegment } from '../../src/core/tinyid.js';

/** An inclusive range of IDs, as a pair (the stream) or as fields (gRPC). */
export type IdRange =
  | readonly [first: bigint | string, last: bigint | string]
  | { readonly first: bigint | string; readonly last: bigint | string };

/** IDs one by one (as numbers or as their decimal text) and inclusive ranges: one answer or one block of one. */
export interface IdParts {
  readonly ids?: readonly (bigint | string)[];
  readonly strings?: readonly string[];
  readonly ranges?: readonly IdRange[];
}

/** Every ID of the parts, in order (of each part: its IDs, its strings, then its ranges expanded), as bigints. */
export function idsOf(parts: IdParts | readonly IdParts[]): bigint[] {
  const out: bigint[] = [];
  for (const p of Array.isArray(parts) ? (parts as readonly IdParts[]) : [parts as IdParts]) {
    for (const id of p.ids ?? []) out.push(BigInt(id));
    for (const id of p.strings ?? []) out.push(BigInt(id));
    for (const r of p.ranges ?? []) {
      const [first, last] = Array.isArray(r)
        ? (r as readonly [bigint | string, bigint | string])
        : [(r as { first: bigint | string }).first, (r as { last: bigint | string }).last];
      for (let v = BigInt(first); v <= BigInt(last); v++) out.push(v);
    }
  }
  return out;
}

/** Tinyid's nextSegmentIdSimple answer, `currentId,loadingId,maxId,delta,remainder`; fails on any other text. */
export function parseSimple(text: string): TinyidSegment {
  const parts = text.split(',');
  assert.equal(parts.length, 5, `not a segment: ${JSON.stringify(text)}`);
  const [currentId, loadingId, maxId, delta, remainder] = parts;
  return {
    currentId: BigInt(currentId),
    loadingId: BigInt(loadingId),
    maxId: BigInt(maxId),
    delta: Number(delta),
    remainder: Number(remainder),
  };
}

/** GET /readyz (with the bearer token when given): its HTTP status, its `status` and the whole body. */
export async function readyz<Body extends { status: string } = { status: string }>(
  url: string,
  token?: string,
): Promise<{ code: number; status: string; body: Body }> {
  const res = await fetch(`${url}/readyz`, token ? { headers: { authorization: `Bearer ${token}` } } : undefined);
  const body = (await res.json()) as Body;
  return { code: res.status, status: body.status, body };
}

/** Awaits p, which must reject with an instance of `type` carrying `code`; answers the error. */
export async function rejectsWith<E extends Error & { readonly code: string }>(
  p: Promise<unknown>,
  type: abstract new (...args: never[]) => E,
  code: string,
): Promise<E> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof type, `expected a ${type.name}, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    return err;
  }
  assert.fail(`expected ${type.name} ${code}, but the promise resolved`);
}
