// Websocket stream load (`/v1/stream`, docs/STREAM.md): one socket, one take at a time, going
// round every tag in its formats (drivers/takes.ts): binary frames of u64 IDs, ranges, json.
import WebSocket from 'ws';
import type { LoadContext, Track } from '../load-context.js';
import { Pace } from '../pace.js';
import { APP, TAGS } from '../tags.js';
import { TAKE_CASES, type TakeCase } from './takes.js';

const TIMEOUT_MS = 15000;

interface Taking {
  readonly req: number;
  readonly track: Track;
  got: number;
  min?: bigint;
  max?: bigint;
  done(error?: string): void;
}

function open(url: string): Promise<WebSocket> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/stream`, { perMessageDeflate: false });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

function seen(t: Taking, first: bigint, last: bigint): void {
  t.track.log.add(first, last);
  t.got += Number(last - first) + 1;
  if (t.min === undefined || first < t.min) t.min = first;
  if (t.max === undefined || last > t.max) t.max = last;
}

/** Feeds one frame of the socket to the take in flight. */
function onFrame(t: Taking | undefined, data: Buffer, binary: boolean): void {
  if (binary) {
    const req = data.readUInt32LE(0);
    const count = data.readUInt32LE(4);
    if (!t || req !== t.req) return;
    for (let i = 0; i < count; i++) {
      const id = data.readBigUInt64LE(8 + 8 * i);
      seen(t, id, id);
    }
    return;
  }
  const msg = JSON.parse(data.toString('utf8')) as {
    op: string;
    req: number | null;
    ids?: string[];
    ranges?: [string, string][];
    code?: string;
    message?: string;
  };
  if (!t || msg.req !== t.req) return;
  if (msg.op === 'block') {
    for (const [first, last] of msg.ranges ?? []) seen(t, BigInt(first), BigInt(last));
    for (const s of msg.ids ?? []) seen(t, BigInt(s), BigInt(s));
  } else if (msg.op === 'done') t.done();
  else if (msg.op === 'error') t.done(`${msg.code}: ${msg.message}`);
}

export async function wsLoop(ctx: LoadContext, client: string, perSecond: number): Promise<void> {
  const tracks = new Map(TAGS.map((t) => [t.tag, ctx.track(client, t)]));
  const pace = new Pace(perSecond * ctx.rate);
  let ws: WebSocket | undefined;
  let taking: Taking | undefined;
  const take = (c: TakeCase, req: number): Promise<{ t: Taking; error?: string }> =>
    new Promise((resolve) => {
      const timer = setTimeout(() => t.done(`no done within ${TIMEOUT_MS} ms`), TIMEOUT_MS);
      const t: Taking = {
        req,
        track: tracks.get(c.tag.tag)!,
        got: 0,
        done(error) {
          if (taking !== t) return;
          clearTimeout(timer);
          taking = undefined;
          resolve({ t, error });
        },
      };
      taking = t;
      const msg = {
        op: 'take',
        req,
        tag: c.tag.tag,
        count: c.count,
        block: c.block,
        format: c.format,
        ...(c.tag.mode === 'rule' ? { app: APP } : {}),
      };
      ws!.send(JSON.stringify(msg));
    });
  try {
    for (let i = 0; ctx.running; i++) {
      const c = TAKE_CASES[i % TAKE_CASES.length];
      try {
        if (!ws || ws.readyState !== WebSocket.OPEN) {
          ws = await open(ctx.at.url);
          ws.on('message', (data: Buffer, binary: boolean) => onFrame(taking, data, binary));
          ws.on('close', (code) => taking?.done(`socket closed (${code})`));
        }
        const sent = performance.now();
        const { t, error } = await take(c, i % 2 ** 32);
        const answered = performance.now();
        // The take's IDs were logged as they came; its order check needs the whole take.
        if (t.min !== undefined && t.max !== undefined) t.track.order?.add(sent, answered, t.min, t.max);
        if (error) {
          ctx.fail('ws take', error.split(':')[0], `${c.tag.tag} ${c.format}: ${error}`);
          // Blocks of a take given up on must not arrive while the next one runs.
          if (error.startsWith('no done')) ws.terminate();
        } else if (t.got !== c.count)
          ctx.fail('ws take', 'short', `${c.tag.tag} ${c.format}: ${t.got} of ${c.count} IDs`);
        else ctx.latency.add('ws take', answered - sent);
      } catch (err) {
        ctx.fail('ws take', 'socket', `${c.tag.tag} ${c.format}: ${(err as Error).message}`);
        ws?.terminate();
        ws = undefined;
      }
      await pace.wait();
    }
  } finally {
    ws?.close();
  }
}
