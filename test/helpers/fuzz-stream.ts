// The websocket stream under fuzzing: the error codes and close codes the server may answer,
// generators of takes and frames, and a client that checks every frame it receives.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import WebSocket from 'ws';
import { ID_TAGS, lockedToken, MAX_I63, RULE_TAGS, STREAM_MAX_COUNT } from './fuzz-run.js';
import { nastyString } from './fuzz-values.js';
import { ID_POOL } from './fuzz-http-parts.js';
import { tally } from './fuzz-http-checks.js';

// ---- websocket stream ----

export const STREAM_CODES = new Set([
  'INVALID_ARGUMENT',
  'LIMIT_EXCEEDED',
  'TAG_NOT_FOUND',
  'TAG_DISABLED',
  'ID_SPACE_EXHAUSTED',
  'UNAVAILABLE',
  'CLOCK_BACKWARDS',
  'LEASE_LOST',
  'UNAUTHORIZED',
]);
/** Close codes the server may use: shutdown, too many sockets or unread replies, a frame too large. */
export const CLOSE_CODES = new Set([1001, 1008, 1009]);

export type WsAction =
  | { readonly t: 'text'; readonly data: string }
  | { readonly t: 'binary'; readonly data: Uint8Array }
  | { readonly t: 'reopen' }
  | { readonly t: 'terminate' }
  | { readonly t: 'oversize' }
  | { readonly t: 'burst'; readonly n: number }
  | { readonly t: 'flood'; readonly n: number };

/** Wrong values for each field of a take (and an unknown field). */
export const badTakeField: Record<string, fc.Arbitrary<unknown>> = {
  op: fc.constantFrom<unknown>('TAKE', 'give', 'done', 'block', '', null, 1, ['take']),
  req: fc.constantFrom<unknown>(-1, 1.5, 4294967296, '1', null, [], 2 ** 53, 1e300, 4294967295),
  tag: fc.constantFrom<unknown>(
    'nope',
    '',
    'a b',
    'x'.repeat(65),
    5,
    null,
    ['seg'],
    'off',
    'tiny',
    'rule',
    'shard',
    'sf',
  ),
  count: fc.constantFrom<unknown>(
    STREAM_MAX_COUNT,
    STREAM_MAX_COUNT + 1,
    1e8,
    1e15,
    0,
    -1,
    1.5,
    '5',
    null,
    true,
    [],
    2 ** 53 + 2,
  ),
  block: fc.constantFrom<unknown>(1, 7, 100_000, 100_001, 0, -5, 1.5, '10', null, 1e20),
  format: fc.constantFrom<unknown>('json', 'binary', 'ranges', 'xml', 'JSON', '', 5, null),
  key: fc.constantFrom<unknown>('alice', '', 'x'.repeat(256), 'x'.repeat(257), 7, null),
  app: fc.constantFrom<unknown>('shop', 'bad app', 'x'.repeat(65), '', 3),
  salt: fc.constantFrom<unknown>('u1', '', 'bad salt', 'x'.repeat(65), null),
  token: fc.constantFrom<unknown>('LOCKED', 'nope', '', 'x'.repeat(513), 1),
  colour: fc.constant<unknown>('red'),
};

/** A take that is valid for its tag, then bent by up to two wrong fields or dropped fields. */
export const takeArb = fc
  .record({
    tag: fc.constantFrom(...ID_POOL),
    req: fc.integer({ min: 0, max: 7 }),
    count: fc.oneof(fc.integer({ min: 1, max: 3000 }), fc.constantFrom(1, 10_000, 50_000)),
    block: fc.option(fc.integer({ min: 1, max: 4000 }), { nil: undefined }),
    format: fc.constantFrom('json', 'binary', 'ranges'),
    edits: fc.array(
      fc.oneof(
        fc.tuple(fc.constantFrom(...Object.keys(badTakeField)), fc.constant(true)),
        fc.tuple(fc.constantFrom('op', 'req', 'tag', 'count', 'key', 'app', 'token'), fc.constant(false)),
      ),
      { maxLength: 2 },
    ),
    values: fc.record(badTakeField),
  })
  .map(({ tag, req, count, block, format, edits, values }) => {
    const m: Record<string, unknown> = {
      op: 'take',
      req,
      tag,
      count,
      block,
      format: RULE_TAGS.has(tag) ? 'json' : tag === 'shard' && format === 'ranges' ? 'binary' : format,
    };
    if (tag === 'shard') m.key = 'alice';
    if (RULE_TAGS.has(tag)) m.app = 'shop';
    if (tag === 'salty') m.salt = 'u1';
    if (RULE_TAGS.has(tag)) m.count = Math.min(count, 500);
    if (tag === 'locked') m.token = 'LOCKED';
    for (const [field, set] of edits) {
      if (set) m[field] = values[field];
      else delete m[field];
    }
    if (m.token === 'LOCKED') m.token = lockedToken;
    return JSON.stringify(m);
  });

export const wsActionArb: fc.Arbitrary<WsAction> = fc.oneof(
  { weight: 10, arbitrary: takeArb.map((data): WsAction => ({ t: 'text', data })) },
  {
    weight: 4,
    arbitrary: fc
      .oneof(
        fc.json({ maxDepth: 3 }),
        nastyString,
        fc.constantFrom(
          'not json',
          '{',
          '{"op":"take"',
          '[1,2]',
          '"take"',
          'null',
          '{}',
          '{"req":3}',
          '{"op":"take","req":1e309,"tag":"seg","count":1}',
          '{"op":"take","req":2,"tag":"seg","count":1e309}',
          '{"op":"take","req":2,"tag":"seg","count":1,"block":-1e309}',
          '{"op":"take","req":3,"tag":"seg","count":1,"__proto__":{"x":1}}',
          `{"op":"take","req":4,"tag":"seg","count":1,"pad":"${'p'.repeat(15000)}"}`,
          `${'['.repeat(5000)}${']'.repeat(5000)}`,
        ),
      )
      .map((data): WsAction => ({ t: 'text', data })),
  },
  { weight: 2, arbitrary: fc.uint8Array({ maxLength: 64 }).map((data): WsAction => ({ t: 'binary', data })) },
  { weight: 1, arbitrary: fc.constant<WsAction>({ t: 'reopen' }) },
  { weight: 1, arbitrary: fc.constant<WsAction>({ t: 'terminate' }) },
  { weight: 1, arbitrary: fc.constant<WsAction>({ t: 'oversize' }) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 6 }).map((n): WsAction => ({ t: 'burst', n })) },
  { weight: 1, arbitrary: fc.integer({ min: 10, max: 24 }).map((n): WsAction => ({ t: 'flood', n })) },
);

/** A raw stream socket that checks every frame it receives and counts the replies that end a message. */
export class StreamProbe {
  /** Text and binary frames sent; each must be answered by exactly one done or error. */
  sent = 0;
  ended = 0;
  closed?: { code: number; reason: string };
  readonly problems: string[] = [];
  /** Replies by kind: done, error <code>. */
  readonly seen = new Map<string, number>();
  /** IDs received per req since its last done or error. */
  private readonly got = new Map<number, number>();
  /** Counts of the takes sent under each req. */
  private readonly counts = new Map<number, Set<number>>();
  private readonly tagOf = new Map<number, Set<string>>();
  private waiters: (() => void)[] = [];
  /** When a frame last came (or the message last went out), ms. */
  private lastHeard = Date.now();
  readonly closedP: Promise<void>;

  private constructor(readonly ws: WebSocket) {
    this.closedP = new Promise((resolve) =>
      ws.once('close', (code, reason) => {
        this.closed = { code, reason: reason.toString() };
        this.wake();
        resolve();
      }),
    );
    ws.on('error', () => undefined);
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      try {
        this.receive(data, isBinary);
      } catch (err) {
        this.problems.push(`${(err as Error).message} in ${data.toString('utf8', 0, 200)}`);
      }
      this.wake();
    });
  }

  static async open(url: string): Promise<StreamProbe> {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/stream`);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return new StreamProbe(ws);
  }

  private wake(): void {
    this.lastHeard = Date.now();
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  private receive(data: Buffer, isBinary: boolean): void {
    if (isBinary) {
      assert.ok(data.length >= 8, 'a binary frame shorter than its header');
      const req = data.readUInt32LE(0);
      const count = data.readUInt32LE(4);
      assert.equal(data.length, 8 + 8 * count, 'binary frame length');
      assert.ok(count >= 1, 'an empty binary block');
      assert.ok(this.counts.has(req), `a binary block for req ${req}, never sent`);
      for (let i = 0; i < count; i++) {
        const id = data.readBigUInt64LE(8 + 8 * i);
        assert.ok(id > 0n && id <= MAX_I63, `binary ID ${id}`);
      }
      this.got.set(req, (this.got.get(req) ?? 0) + count);
      return;
    }
    const m = JSON.parse(data.toString('utf8')) as Record<string, unknown>;
    assert.ok(m.op === 'block' || m.op === 'done' || m.op === 'error', `unknown op ${String(m.op)}`);
    if (m.op === 'error') {
      assert.deepEqual(Object.keys(m).sort(), ['code', 'message', 'op', 'req']);
      assert.ok(
        m.req === null || (Number.isInteger(m.req) && (m.req as number) >= 0 && (m.req as number) <= 0xffffffff),
        `error req ${String(m.req)}`,
      );
      assert.ok(typeof m.code === 'string' && STREAM_CODES.has(m.code), `error code ${String(m.code)}`);
      assert.ok(typeof m.message === 'string' && m.message.length > 0, 'error without message');
      if (m.req !== null) this.got.delete(m.req as number);
      tally(this.seen, `error ${m.code}`);
      this.ended++;
      return;
    }
    const req = m.req as number;
    assert.ok(this.counts.has(req), `a ${m.op} for req ${req}, never sent`);
    if (m.op === 'done') {
      assert.deepEqual(Object.keys(m).sort(), ['op', 'req']);
      const n = this.got.get(req) ?? 0;
      assert.ok(
        this.counts.get(req)!.has(n),
        `req ${req} done after ${n} IDs; counts asked: ${[...this.counts.get(req)!]}`,
      );
      this.got.delete(req);
      tally(this.seen, 'done');
      this.ended++;
      return;
    }
    let n = 0;
    if (m.ids !== undefined) {
      const ids = m.ids as unknown[];
      assert.ok(Array.isArray(ids) && ids.length >= 1);
      const tags = [...this.tagOf.get(req)!];
      for (const id of ids)
        assert.ok(
          typeof id === 'string' && tags.some((t) => ID_TAGS[t]?.(id)),
          `block ID ${String(id)} of tags ${tags}`,
        );
      n = ids.length;
    } else {
      const ranges = m.ranges as [string, string][];
      assert.ok(Array.isArray(ranges) && ranges.length >= 1);
      for (const [a, b] of ranges) {
        assert.ok(/^[1-9]\d*$/.test(a) && /^[1-9]\d*$/.test(b) && BigInt(a) <= BigInt(b), `range ${a}..${b}`);
        n += Number(BigInt(b) - BigInt(a)) + 1;
      }
    }
    this.got.set(req, (this.got.get(req) ?? 0) + n);
  }

  send(data: string | Uint8Array): void {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    if (typeof data === 'string') {
      // Remember what each parseable take asked for, to check its done.
      try {
        const m = JSON.parse(data) as Record<string, unknown>;
        if (m && typeof m === 'object' && Number.isInteger(m.req)) {
          const req = m.req as number;
          if (!this.counts.has(req)) this.counts.set(req, new Set());
          if (!this.tagOf.has(req)) this.tagOf.set(req, new Set());
          if (Number.isInteger(m.count)) this.counts.get(req)!.add(m.count as number);
          if (typeof m.tag === 'string') this.tagOf.get(req)!.add(m.tag);
        }
      } catch {
        // not JSON: answered with req null
      }
    }
    this.sent++;
    this.lastHeard = Date.now();
    this.ws.send(data, { binary: typeof data !== 'string' });
  }

  /**
   * Waits until every message sent has its one reply, or the server closed the socket, or nothing
   * came for `idleMs`: a take of many small blocks may run for seconds, but never silently.
   */
  async settle(idleMs = 15_000): Promise<void> {
    while (this.ended < this.sent && !this.closed) {
      const left = this.lastHeard + idleMs - Date.now();
      if (left <= 0) break;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  async close(): Promise<void> {
    if (!this.closed) this.ws.close();
    await Promise.race([this.closedP, sleep(2000)]);
  }
}
