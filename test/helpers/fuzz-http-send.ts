// HTTP for the fuzz tests: a request case and its answer, sent through a keep-alive agent with
// a bound on the wait (no answer is a hang), and raw bytes sent as one request for what the
// client would refuse to send.
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { REQUEST_TIMEOUT_MS } from './fuzz-run.js';

// ---- HTTP ----

export interface HttpCase {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body?: Buffer;
}

export interface HttpAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

export const agent = new Agent({ keepAlive: true, maxSockets: 4 });

export function send(base: string, c: HttpCase): Promise<HttpAnswer> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { agent, host: u.hostname, port: u.port, method: c.method, path: c.path, headers: c.headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
      },
    );
    req.setTimeout(REQUEST_TIMEOUT_MS, () =>
      req.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms (a hang)`)),
    );
    req.on('error', reject);
    req.end(c.body);
  });
}

/** Sends raw bytes as one HTTP request and returns everything the server wrote before closing. */
export function rawHttp(base: string, head: string): Promise<string> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const s = connect(Number(u.port), u.hostname, () => s.end(Buffer.from(head, 'latin1')));
    let out = '';
    s.setTimeout(REQUEST_TIMEOUT_MS, () => s.destroy(new Error('no answer (a hang)')));
    s.on('data', (d: Buffer) => (out += d.toString('latin1')));
    s.on('close', () => resolve(out));
    s.on('error', reject);
  });
}
