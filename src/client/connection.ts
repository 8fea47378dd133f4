// One websocket to GET /v1/stream: numbers the takes sent on it, hands each block to the
// take it belongs to, and fails every take in flight when the socket drops.
import WebSocket from 'ws';
import { IdmintClientError } from './client-error.js';
import { decodeBinary, decodeIdsBlock, decodeText, expandRanges } from './frames.js';

export type Format = 'binary' | 'json' | 'ranges';

export interface TakeRequest {
  readonly tag: string;
  readonly count: number;
  readonly format: Format;
  readonly block?: number;
  readonly key?: string;
  readonly app?: string;
  readonly salt?: string;
  /** Sent as the take's idempotency_key. */
  readonly idempotencyKey?: string;
}

/** Receives the blocks of one take; exactly one of done and fail is called, once. */
export interface TakeHandler {
  /** IDs as bigints (binary, ranges and numeric json) or strings (rule tags). */
  ids(ids: bigint[] | string[]): void;
  done(): void;
  fail(err: IdmintClientError): void;
}

interface Pending {
  readonly handler: TakeHandler;
  /** JSON IDs stay strings (rule tags). */
  readonly strings: boolean;
  received: number;
  readonly count: number;
}

const MAX_REQ = 0xffff_ffff;

export function streamUrl(base: string): string {
  const url = new URL(base);
  url.protocol = url.protocol === 'https:' ? 'wss:' : url.protocol === 'http:' ? 'ws:' : url.protocol;
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1/stream`;
  url.search = '';
  return url.toString();
}

export class StreamConnection {
  private readonly pending = new Map<number, Pending>();
  private nextReq = 1;
  private closedWith?: IdmintClientError;

  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (data: Buffer, isBinary: boolean) => this.onMessage(data, isBinary));
    ws.on('close', (code: number, reason: Buffer) =>
      this.failAll(
        new IdmintClientError(
          'DISCONNECTED',
          `the stream socket closed (${code}${reason.length ? ` ${reason.toString()}` : ''})`,
        ),
      ),
    );
    ws.on('error', () => undefined); // 'close' follows and fails the takes
  }

  /** Opens a socket to the stream route of the node at `base` (http(s) URL). */
  static open(base: string, opts: { headers?: Record<string, string>; timeoutMs: number }): Promise<StreamConnection> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(streamUrl(base), {
        headers: opts.headers,
        handshakeTimeout: opts.timeoutMs,
        perMessageDeflate: false,
      });
      const onError = (err: Error) => {
        ws.removeListener('open', onOpen);
        reject(new IdmintClientError('DISCONNECTED', `cannot open the stream socket: ${err.message}`, { cause: err }));
      };
      const onOpen = () => {
        ws.removeListener('error', onError);
        resolve(new StreamConnection(ws));
      };
      ws.once('error', onError);
      ws.once('open', onOpen);
    });
  }

  get open(): boolean {
    return this.closedWith === undefined && this.ws.readyState === WebSocket.OPEN;
  }

  get inFlight(): number {
    return this.pending.size;
  }

  /** Sends a take; its blocks go to the handler. */
  take(request: TakeRequest, handler: TakeHandler): void {
    if (!this.open) {
      handler.fail(this.closedWith ?? new IdmintClientError('DISCONNECTED', 'the stream socket is not open'));
      return;
    }
    let req = this.nextReq;
    while (this.pending.has(req)) req = req >= MAX_REQ ? 1 : req + 1;
    this.nextReq = req >= MAX_REQ ? 1 : req + 1;
    this.pending.set(req, { handler, strings: request.app !== undefined, received: 0, count: request.count });
    const msg: Record<string, unknown> = {
      op: 'take',
      req,
      tag: request.tag,
      count: request.count,
      format: request.format,
    };
    for (const field of ['block', 'key', 'app', 'salt'] as const)
      if (request[field] !== undefined) msg[field] = request[field];
    if (request.idempotencyKey !== undefined) msg.idempotency_key = request.idempotencyKey;
    this.ws.send(JSON.stringify(msg));
  }

  close(): void {
    this.failAll(new IdmintClientError('DISCONNECTED', 'the stream socket was closed by the client'));
    this.ws.close(1000);
  }

  /** Drops the socket at once, without a closing handshake. */
  terminate(): void {
    this.ws.terminate();
  }

  private failAll(err: IdmintClientError): void {
    this.closedWith ??= err;
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const pending of all) pending.handler.fail(err);
  }

  private protocolError(detail: string): void {
    this.failAll(new IdmintClientError('PROTOCOL', `unexpected message from the server: ${detail}`));
    this.ws.terminate();
  }

  private onMessage(data: Buffer, isBinary: boolean): void {
    if (isBinary) {
      const block = decodeBinary(data);
      if (!block) return this.protocolError('malformed binary block');
      const pending = this.pending.get(block.req);
      if (!pending) return this.protocolError(`binary block for unknown req ${block.req}`);
      const ids = new Array<bigint>(block.ids.length);
      for (let i = 0; i < ids.length; i++) ids[i] = block.ids[i];
      this.deliver(pending, ids);
      return;
    }
    const fast = decodeIdsBlock(data);
    const fastFor = fast && this.pending.get(fast.req);
    if (fast && fastFor && !fastFor.strings) {
      this.deliver(fastFor, fast.ids);
      return;
    }
    const message = decodeText(data);
    if (!message) return this.protocolError(data.toString('utf8').slice(0, 200));
    if (message.op === 'error' && message.req === null) {
      // A refusal not tied to a take (e.g. too many sockets); the socket closes next.
      this.failAll(new IdmintClientError(message.code, message.message));
      return;
    }
    const pendingTake = this.pending.get(message.req as number);
    if (!pendingTake) return this.protocolError(`${message.op} for unknown req ${message.req}`);
    if (message.op === 'block') {
      if (message.ids) this.deliver(pendingTake, pendingTake.strings ? message.ids : message.ids.map((s) => BigInt(s)));
      else if (message.ranges) {
        const out: bigint[] = [];
        expandRanges(message.ranges, out);
        this.deliver(pendingTake, out);
      } else this.protocolError('block without ids or ranges');
      return;
    }
    this.pending.delete(message.req as number);
    if (message.op === 'done') {
      if (pendingTake.received !== pendingTake.count)
        pendingTake.handler.fail(
          new IdmintClientError('PROTOCOL', `take ended with ${pendingTake.received} of ${pendingTake.count} IDs`),
        );
      else pendingTake.handler.done();
    } else {
      pendingTake.handler.fail(new IdmintClientError(message.code, message.message));
    }
  }

  private deliver(pending: Pending, ids: bigint[] | string[]): void {
    pending.received += ids.length;
    pending.handler.ids(ids);
  }
}
