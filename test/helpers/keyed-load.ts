// Keyed requests for fault tests: every answer to a request with or without an Idempotency-Key
// is recorded (an observer of everything clients saw), a retrier sends each of its keys until
// it is answered and then replays it while a fault happens, and the checks of what the
// idempotency section of docs/GUARANTEES.md promises across a Redis that lost data.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { now, waitFor, type Rec } from './fault-load.js';

/** One request's answer, as fault-load.ts records one; key: its idempotency key (none: a request without one). */
export type Answer = Pick<Rec, 'count' | 'sent' | 'done' | 'status' | 'ids' | 'code' | 'detail'> & {
  readonly key?: string;
};

/** Every answer of every request sent through it. */
export class Observer {
  readonly answers: Answer[] = [];

  /** GET /v1/ids/:tag?count=n at url, with the key as Idempotency-Key when given; recorded, never throws. */
  async ask(url: string, tag: string, count: number, key?: string, timeoutMs = 10_000): Promise<Answer> {
    const sent = now();
    const base = { key, count, sent };
    let a: Answer;
    try {
      const res = await fetch(`${url}/v1/ids/${tag}?count=${count}`, {
        headers: key === undefined ? {} : { 'idempotency-key': key },
        signal: AbortSignal.timeout(timeoutMs),
      });
      const body = (await res.json()) as { ids?: string[]; error?: { code?: string; message?: string } };
      const done = now();
      if (res.status === 200 && Array.isArray(body.ids) && body.ids.length === count)
        a = { ...base, done, status: 200, ids: body.ids.map(BigInt) };
      else
        a = {
          ...base,
          done,
          status: res.status,
          code: body.error?.code,
          detail: body.error?.message ?? JSON.stringify(body).slice(0, 200),
        };
    } catch (err) {
      a = { ...base, done: now(), status: 0, detail: (err as Error).message };
    }
    this.answers.push(a);
    return a;
  }

  /** The key's answer: asked until one is a 200 (a restored claim answers 409 until it expires). */
  answerOf(url: string, tag: string, count: number, key: string, withinMs = 30_000): Promise<Answer> {
    return waitFor(
      `an answer for key ${key}`,
      async () => {
        const a = await this.ask(url, tag, count, key);
        return a.ids ? a : undefined;
      },
      withinMs,
      20,
    );
  }
}

/**
 * A client that sends key after key (prefix-0, prefix-1, ...), each until it is answered, then
 * `replays` times more: its retries land on the worst moments of a fault.
 */
export class Retrier {
  /** Each key it used, with its count. */
  readonly keys = new Map<string, number>();
  private running = true;
  private readonly loop: Promise<void>;

  constructor(observer: Observer, url: () => string, tag: string, prefix: string, count: () => number, replays = 2) {
    this.loop = (async () => {
      for (let i = 0; this.running; i++) {
        const key = `${prefix}-${i}`;
        const n = count();
        this.keys.set(key, n);
        let answered = 0;
        while (this.running && answered <= replays) {
          const a = await observer.ask(url(), tag, n, key, 3000);
          if (a.ids) answered++;
          else await sleep(20);
        }
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }
}

const text = (ids: readonly bigint[]) => ids.join(',');

/**
 * What a Redis that lost data (restarted from a snapshot, empty, or a replica promoted) may do
 * to keys, by the promise: `lostFrom` is when the records the server came back with end (the
 * snapshot, or the start for an empty restart); `faultAt` when the fault began; `backAt` when
 * the server answered again. Checked over every answer:
 *   - a key answered before lostFrom is answered the same IDs ever after (the data kept it);
 *   - a key has one answer among those done before the fault and one among those sent after
 *     the server was back; when the two differ (its record was lost), the new one is a first
 *     answer: IDs above every ID answered before the fault, never anyone else's;
 *   - no ID is in two different answers (keyed or not);
 *   - every ID first answered to a request sent after the server was back is above every ID
 *     answered before the fault;
 *   - a refusal is only UNAVAILABLE (Redis away) or IDEMPOTENCY_KEY_IN_FLIGHT (a claim the
 *     server came back with), and no request went unanswered.
 * Returns counts for the test's log.
 */
export function assertKeyPromises(
  answers: readonly Answer[],
  lostFrom: number,
  faultAt: number,
  backAt: number,
): { keys: number; changed: number; ids: number } {
  const ok = answers.filter((a): a is Answer & { ids: bigint[] } => a.ids !== undefined);
  for (const a of answers) {
    if (a.ids) continue;
    assert.ok(
      (a.status === 503 && a.code === 'UNAVAILABLE') || (a.status === 409 && a.code === 'IDEMPOTENCY_KEY_IN_FLIGHT'),
      `a refusal other than UNAVAILABLE or IDEMPOTENCY_KEY_IN_FLIGHT: ${JSON.stringify({ ...a, ids: undefined })}`,
    );
  }
  const before = ok.filter((a) => a.done < faultAt);
  let highest = 0n;
  for (const a of before) for (const id of a.ids) if (id > highest) highest = id;

  const byKey = new Map<string, (Answer & { ids: bigint[] })[]>();
  for (const a of ok) if (a.key !== undefined) byKey.set(a.key, [...(byKey.get(a.key) ?? []), a]);
  let changed = 0;
  for (const [key, list] of byKey) {
    const first = list.reduce((x, y) => (y.done < x.done ? y : x));
    const early = new Set(list.filter((a) => a.done < faultAt).map((a) => text(a.ids)));
    const late = new Set(list.filter((a) => a.sent >= backAt).map((a) => text(a.ids)));
    assert.ok(early.size <= 1, `key ${key} had ${early.size} answers before the fault: ${[...early].join(' | ')}`);
    assert.ok(
      late.size <= 1,
      `key ${key} had ${late.size} answers after the server was back: ${[...late].join(' | ')}`,
    );
    const all = new Set(list.map((a) => text(a.ids)));
    if (first.done < lostFrom)
      assert.equal(
        all.size,
        1,
        `key ${key}, answered before the data the server came back with ended, got other IDs: ${[...all].join(' | ')}`,
      );
    if (all.size > 1) {
      changed++;
      for (const a of list)
        if (text(a.ids) !== text(first.ids))
          assert.ok(
            a.ids.every((id) => id > highest),
            `key ${key}'s new answer ${text(a.ids)} is not above every ID answered before the fault (${highest}): its first was ${text(first.ids)}`,
          );
    }
  }

  // Each different answer once: a key's replays are one answer, a request without a key its own.
  const owner = new Map<bigint, string>();
  const seen = new Set<string>();
  for (const [i, a] of ok.entries()) {
    const who = a.key === undefined ? `unkeyed #${i}` : `key ${a.key} = ${text(a.ids)}`;
    if (seen.has(who)) continue;
    seen.add(who);
    for (const id of a.ids) {
      const other = owner.get(id);
      assert.equal(other, undefined, `ID ${id} answered to ${who} and to ${other}`);
      owner.set(id, who);
    }
  }
  for (const a of ok)
    if (
      a.sent >= backAt &&
      !(a.key !== undefined && byKey.get(a.key)!.some((b) => b.sent < backAt && text(b.ids) === text(a.ids)))
    )
      for (const id of a.ids)
        assert.ok(
          id > highest,
          `ID ${id}, first answered after the server was back, is not above ${highest}, answered before the fault`,
        );
  return { keys: byKey.size, changed, ids: owner.size };
}

/**
 * After a Redis that came back empty: no key answered before the fault is answered the same
 * IDs by a request sent once the server was back. Every record was lost, so such an answer
 * came from a process's memory of what the server no longer holds, while another process
 * serves the key as new.
 */
export function assertNoneRemembered(answers: readonly Answer[], faultAt: number, backAt: number): void {
  const before = new Map<string, string>();
  for (const a of answers) if (a.key !== undefined && a.ids && a.done < faultAt) before.set(a.key, text(a.ids));
  for (const a of answers)
    if (a.key !== undefined && a.ids && a.sent >= backAt)
      assert.notEqual(
        text(a.ids),
        before.get(a.key),
        `key ${a.key} was answered ${text(a.ids)} after the server came back empty, as before it: from memory`,
      );
}
