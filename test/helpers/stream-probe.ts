// A raw websocket client of the stream (GET /v1/stream) for its tests: it collects the blocks
// of each take by req in every format, the errors that name no take of its own, and the close
// code, so a test can check exact counts, refusals and closes.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';

export interface TakeResult {
  ids: bigint[];
  strings: string[];
  ranges: [bigint, bigint][];
  blocks: number;
  largestBlock: number;
  error?: { code: string; message: string };
}

/** A raw websocket client of the stream: collects the replies of each req. */
export class Probe {
  readonly ws: WebSocket;
  /** Errors without a req (refused control messages). */
  readonly loose: { code: string; message: string; req: number | null }[] = [];
  private readonly takes = new Map<number, { r: TakeResult; resolve: (r: TakeResult) => void }>();
  private looseWaiter?: () => void;
  closed?: { code: number; reason: string };
  private readonly closedP: Promise<void>;

  private constructor(ws: WebSocket) {
    this.ws = ws;
    this.closedP = new Promise((resolve) =>
      ws.once('close', (code, reason) => {
        this.closed = { code, reason: reason.toString() };
        resolve();
      }),
    );
    ws.on('error', () => undefined);
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) {
        const req = data.readUInt32LE(0);
        const count = data.readUInt32LE(4);
        assert.equal(data.length, 8 + 8 * count, 'binary frame length');
        const t = this.takes.get(req);
        assert.ok(t, `binary block for unknown req ${req}`);
        for (let i = 0; i < count; i++) t.r.ids.push(data.readBigUInt64LE(8 + 8 * i));
        t.r.blocks++;
        t.r.largestBlock = Math.max(t.r.largestBlock, count);
        return;
      }
      const m = JSON.parse(data.toString()) as {
        op: string;
        req: number | null;
        ids?: string[];
        ranges?: [string, string][];
        code?: string;
        message?: string;
      };
      if (m.op === 'error' && m.req === null) {
        this.loose.push({ code: m.code!, message: m.message!, req: null });
        this.looseWaiter?.();
        return;
      }
      const t = this.takes.get(m.req!);
      if (!t) {
        this.loose.push({ code: m.code ?? m.op, message: m.message ?? '', req: m.req });
        this.looseWaiter?.();
        return;
      }
      if (m.op === 'block') {
        t.r.blocks++;
        if (m.ids) {
          t.r.largestBlock = Math.max(t.r.largestBlock, m.ids.length);
          for (const s of m.ids) t.r.strings.push(s);
        }
        if (m.ranges) {
          let n = 0;
          for (const [a, b] of m.ranges) {
            t.r.ranges.push([BigInt(a), BigInt(b)]);
            n += Number(BigInt(b) - BigInt(a)) + 1;
          }
          t.r.largestBlock = Math.max(t.r.largestBlock, n);
        }
      } else {
        if (m.op === 'error') t.r.error = { code: m.code!, message: m.message! };
        this.takes.delete(m.req!);
        t.resolve(t.r);
      }
    });
  }

  static open(url: string): Promise<Probe> {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/stream`);
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new Probe(ws)));
      ws.once('error', reject);
    });
  }

  /** Sends a take and resolves with everything it received up to done or error. */
  take(msg: Record<string, unknown>): Promise<TakeResult> {
    const req = msg.req as number;
    return new Promise((resolve) => {
      this.takes.set(req, { r: { ids: [], strings: [], ranges: [], blocks: 0, largestBlock: 0 }, resolve });
      this.ws.send(JSON.stringify({ op: 'take', ...msg }));
    });
  }

  /** Sends raw data and resolves with the next error that has no take of this probe. */
  async refused(data: string | Buffer): Promise<{ code: string; message: string; req: number | null }> {
    const before = this.loose.length;
    const got = new Promise<void>((r) => (this.looseWaiter = r));
    this.ws.send(data, { binary: typeof data !== 'string' });
    if (this.loose.length === before) await Promise.race([got, sleep(3000)]);
    assert.ok(this.loose.length > before, `no error for ${String(data).slice(0, 80)}`);
    return this.loose[this.loose.length - 1];
  }

  async close(): Promise<void> {
    this.ws.close();
    await Promise.race([this.closedP, sleep(2000)]);
  }

  whenClosed(): Promise<void> {
    return this.closedP;
  }
}
