// Client-side load for integration tests: timed ID requests, and the checks of the ordering
// promises over what the clients saw.
import { performance } from 'node:perf_hooks';
import { findDuplicates } from '../../tools/duplicates.js';
import { increasing, realTimeOrder as realTimeOrderOf } from '../../tools/order.js';

export interface Answer {
  /** Which client loop and which node sent it. */
  readonly client: number;
  readonly node: number;
  readonly tag: string;
  /** performance.now() just before sending, and once the whole answer was read. */
  readonly sent: number;
  readonly answered: number;
  readonly ids: bigint[];
}

export interface Failure {
  readonly client: number;
  readonly node: number;
  readonly tag: string;
  readonly sent: number;
  readonly answered: number;
  /** HTTP status, or 0 when the request failed below HTTP (refused, reset). */
  readonly status: number;
  readonly code?: string;
  /** The Retry-After header of an error answer. */
  readonly retryAfter?: string;
  readonly detail: string;
}

/** GET /v1/id/:tag (count 1, single) or /v1/ids/:tag?count=n, timed. */
export async function timedTake(
  url: string,
  who: { client: number; node: number },
  tag: string,
  count: number,
  single: boolean,
): Promise<Answer | Failure> {
  const sent = performance.now();
  const path = single ? `/v1/id/${tag}` : `/v1/ids/${tag}?count=${count}`;
  let status = 0;
  try {
    const res = await fetch(url + path);
    status = res.status;
    const text = await res.text();
    const answered = performance.now();
    let body: { id?: string; ids?: string[]; error?: { code?: string; message?: string } };
    try {
      body = JSON.parse(text);
    } catch {
      return { ...who, tag, sent, answered, status, detail: `not JSON: ${text.slice(0, 200)}` };
    }
    if (status === 200) {
      const raw = single ? (body.id === undefined ? undefined : [body.id]) : body.ids;
      if (!raw || raw.length !== count || !raw.every((s) => /^[1-9]\d*$/.test(s))) {
        return { ...who, tag, sent, answered, status, detail: `200 without ${count} IDs: ${text.slice(0, 200)}` };
      }
      return { ...who, tag, sent, answered, ids: raw.map(BigInt) };
    }
    const retryAfter = res.headers.get('retry-after') ?? undefined;
    return {
      ...who,
      tag,
      sent,
      answered,
      status,
      code: body.error?.code,
      retryAfter,
      detail: `${status} ${text.slice(0, 200)}`,
    };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    return {
      ...who,
      tag,
      sent,
      answered: performance.now(),
      status,
      detail: `${e.message} ${e.cause?.code ?? e.cause?.message ?? ''}`.trim(),
    };
  }
}

export const isAnswer = (r: Answer | Failure): r is Answer => 'ids' in r;

/** Every ID of the answers, with a report of the repeated ones (empty when all are unique). */
export function duplicates(answers: readonly Answer[]): { total: number; repeated: string[] } {
  const { total, repeats } = findDuplicates(answers, (a) => a.ids);
  return { total, repeated: repeats.map((d) => `${d.id} (client ${d.again.client}, node ${d.again.node})`) };
}

/**
 * Real-time order: an answer to a request sent after another request's answer arrived holds
 * only larger IDs. Returns the number of requests that had some earlier answer to compare
 * with, and the violations found.
 */
export function realTimeOrder(answers: readonly Answer[]): { checked: number; violations: string[] } {
  const { checked, violations } = realTimeOrderOf(answers, (a) => ({
    sent: a.sent,
    answered: a.answered,
    min: a.ids.reduce((m, v) => (v < m ? v : m), a.ids[0]),
    max: a.ids[a.ids.length - 1],
  }));
  return {
    checked,
    violations: violations.map(
      ({ item: b, itemMin, earlier, earlierMax }) =>
        `client ${b.client} (node ${b.node}) sent at ${b.sent.toFixed(2)} got ${itemMin}, ` +
        `but client ${earlier.client} (node ${earlier.node}) had received ${earlierMax} at ${earlier.answered.toFixed(2)}`,
    ),
  };
}

/** IDs strictly increasing along a sequence of answers (and within each). */
export function strictlyIncreasing(answers: readonly Answer[]): { checked: number; violations: string[] } {
  const ids = answers.flatMap((a) => a.ids);
  const of = answers.flatMap((a) => a.ids.map(() => a));
  const { checked, violations } = increasing(ids);
  return {
    checked,
    violations: violations.map(
      (v) => `ID #${v.index} ${v.id} after ${v.previous} (client ${of[v.index].client}, node ${of[v.index].node})`,
    ),
  };
}

/** JSON.stringify that writes bigints as decimal strings (for assertion messages). */
export const show = (v: unknown): string => JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? String(x) : x));
