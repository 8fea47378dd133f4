// A burst of concurrent requests at one node for the admin-consistency tests: one ID each
// over the ID service itself (all in one turn), HTTP, UDP and the websocket stream, their
// outcomes ('OK' with what the ID says of the definition that made it, or the error code) and
// the check that all of them answered the same; and the admin calls the tests make.
import assert from 'node:assert/strict';
import { createSocket, type Socket } from 'node:dgram';
import WebSocket from 'ws';
import type { Node } from '../../src/process/serve.js';
import type { IdOptions, IdService } from '../../src/service/id-service.js';
import { ADMIN_TOKEN } from '../../tools/env.js';
import { adminHeaders } from '../../tools/node.js';

/** One ID straight from a node's ID service, as a promise whether it was answered at once or not. */
export function issued(node: { rt: { ids: IdService } }, tag: string, opts: IdOptions = {}): Promise<string[]> {
  try {
    return Promise.resolve(node.rt.ids.issue({ ...opts, tag, as: 'ids', count: 1 }));
  } catch (err) {
    return Promise.reject(err);
  }
}

/** Times each change is made, per place it is made from. */
export const REPEAT = 3;
/** Concurrent requests per transport in a burst. */
const DIRECT = 8;
const HTTP = 8;
const UDP = 4;
const WS = 4;

/** The API's code for a UDP reply's (-7 covers a disabled tag and an unavailable one). */
export function udpOutcome(code: number, message: string | undefined): string {
  if (code === -1) return 'TAG_NOT_FOUND';
  if (code === -8) return 'UNAUTHORIZED';
  if (code === -7) return /is disabled/.test(message ?? '') ? 'TAG_DISABLED' : 'UNAVAILABLE';
  return `udp ${code} ${message}`;
}

export interface Probe {
  readonly tag: string;
  /** A rule's app name. */
  readonly app?: string;
  readonly token?: string;
  /** What an ID says about the definition that made it ('' when nothing). */
  readonly mark?: (id: string) => string;
}

/** 'OK' (with the ID's mark) or the error code, per transport. */
export type Outcomes = Record<'direct' | 'http' | 'udp' | 'ws', string[]>;

export const ok = (p: Probe, id: string) => (p.mark ? `OK:${p.mark(id)}` : 'OK');

/** Open UDP sockets and websockets, ready to send one request each at once. */
export class Burst {
  private constructor(
    private readonly node: Node & { url: string },
    private readonly p: Probe,
    private readonly socks: Socket[],
    private readonly wss: WebSocket[],
  ) {}

  static async open(node: Node & { url: string }, p: Probe): Promise<Burst> {
    const socks = await Promise.all(
      Array.from({ length: UDP }, async () => {
        const s = createSocket('udp4');
        await new Promise<void>((resolve) => s.bind(0, '127.0.0.1', resolve));
        return s;
      }),
    );
    const wss = await Promise.all(
      Array.from({ length: WS }, async () => {
        const ws = new WebSocket(`${node.url.replace('http', 'ws')}/v1/stream`);
        await new Promise((resolve, reject) => {
          ws.once('open', resolve);
          ws.once('error', reject);
        });
        return ws;
      }),
    );
    return new Burst(node, p, socks, wss);
  }

  /**
   * Sends every request now: the ID service's own calls within this very turn, then the
   * datagrams, stream takes and HTTP requests. Resolves with every outcome.
   */
  fire(): Promise<Outcomes> {
    const { p, node } = this;
    const opts = { app: p.app, token: p.token };
    const direct = Array.from({ length: DIRECT }, () =>
      issued(node, p.tag, opts).then(
        ([id]) => ok(p, id),
        (e: { code?: string }) => String(e.code),
      ),
    );
    const udp = this.socks.map(
      (s) =>
        new Promise<string>((resolve, reject) => {
          const t = setTimeout(() => reject(new Error('no UDP reply within 5 s')), 5000);
          s.once('message', (m) => {
            clearTimeout(t);
            const r = JSON.parse(m.toString()) as { code: number; message?: string; data?: string };
            resolve(r.code === 0 ? ok(p, String(r.data)) : udpOutcome(r.code, r.message));
          });
          s.send(
            // Padded (the pad is not echoed), so that a refusal's whole message fits in its reply.
            JSON.stringify({
              action: 'get',
              rule_name: p.tag,
              app_name: p.app ?? 'a',
              ...(p.token ? { token: p.token } : {}),
              pad: 'p'.repeat(200),
            }),
            node.udpPort!,
            '127.0.0.1',
          );
        }),
    );
    const ws = this.wss.map(
      (w, i) =>
        new Promise<string>((resolve) => {
          const ids: string[] = [];
          const onMessage = (m: WebSocket.RawData) => {
            const msg = JSON.parse(m.toString()) as { op: string; code?: string; ids?: string[] };
            if (msg.op === 'block') ids.push(...(msg.ids ?? []));
            if (msg.op === 'error' || msg.op === 'done') {
              w.off('message', onMessage);
              resolve(msg.op === 'error' ? String(msg.code) : ids.length === 1 ? ok(p, ids[0]) : `ids ${ids.length}`);
            }
          };
          w.on('message', onMessage);
          w.send(
            JSON.stringify({
              op: 'take',
              req: i + 1,
              tag: p.tag,
              count: 1,
              format: 'json',
              ...(p.app ? { app: p.app } : {}),
              ...(p.token ? { token: p.token } : {}),
            }),
          );
        }),
    );
    const query = p.app ? `?app=${p.app}` : '';
    const headers: Record<string, string> = p.token ? { 'x-idmint-token': p.token } : {};
    const http = Array.from({ length: HTTP }, async () => {
      const res = await fetch(`${node.url}/v1/id/${p.tag}${query}`, { headers });
      const body = (await res.json()) as { id?: string; error?: { code: string } };
      return res.status === 200 ? ok(p, String(body.id)) : String(body.error?.code);
    });
    return (async () => ({
      direct: await Promise.all(direct),
      udp: await Promise.all(udp),
      ws: await Promise.all(ws),
      http: await Promise.all(http),
    }))();
  }

  close(): void {
    for (const s of this.socks) s.close();
    for (const w of this.wss) w.close();
  }
}

export function assertAll(got: Outcomes, want: string, what: string): void {
  const wrong = Object.entries(got).flatMap(([via, outcomes]) => {
    const bad = outcomes.filter((o) => o !== want);
    return bad.length === 0
      ? []
      : [`${bad.length} of ${outcomes.length} ${via} requests answered ${JSON.stringify(bad)}`];
  });
  assert.equal(wrong.length, 0, `${what}, instead of ${want}: ${wrong.join('; ')}`);
}

export async function admin(
  url: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<Record<string, unknown>> {
  const res = await fetch(url + path, {
    method,
    headers: body === undefined ? { authorization: `Bearer ${ADMIN_TOKEN}` } : adminHeaders,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${text}`);
  return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
}
