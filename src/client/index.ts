// The TypeScript client of idmint (`import { IdmintClient } from 'idmint/client'`): single IDs
// and batches over HTTP, bulk takes over the websocket stream, and an async iterator with a
// local prefetch buffer. Segment and snowflake IDs are bigints; rule IDs (tags that need an
// `app`) are strings.
import { StreamConnection, type Format, type TakeRequest } from './connection.js';
import { IdmintClientError } from './client-error.js';
import { IdStream, type IdStreamOptions } from './id-stream.js';

export { IdmintClientError, IdStream };
export type { ClientCode } from './client-error.js';
export type { Format, IdStreamOptions };

export interface IdmintClientOptions {
  /** Base URL of an idmint node, e.g. "http://127.0.0.1:8080". */
  readonly url: string;
  /** Extra headers sent with every HTTP request and websocket upgrade. */
  readonly headers?: Record<string, string>;
  /** Timeout of an HTTP request and of opening a socket, ms. Default 10000. */
  readonly timeoutMs?: number;
  /** Takes in flight at once on the shared socket (more wait their turn). Default 8. */
  readonly maxInFlight?: number;
  /**
   * How often a call with an idempotencyKey is sent again, with the same key, after a
   * transient failure (UNAVAILABLE, a timeout, a dropped connection). Default 3.
   */
  readonly retries?: number;
}

/**
 * An idempotency key (1 to 255 visible ASCII characters, at most 1000 IDs per call): a call
 * made again with the same key gets the IDs of the first one, and the client itself retries
 * transient failures with it (see `retries`).
 */
export interface Idempotent {
  readonly idempotencyKey?: string;
}

/** For sharded segment tags: the key that picks the shard. */
export interface IdOptions extends Idempotent {
  readonly key?: string;
}

/** Rule tags: the app whose counter is used, and an optional salt. */
export interface RuleOptions extends Idempotent {
  readonly app: string;
  readonly salt?: string;
}

export interface TakeOptions extends IdOptions {
  /** Wire format; the result is the same. Default "binary". */
  readonly format?: Format;
  /** IDs per block on the wire; the server's default when unset. */
  readonly block?: number;
}

export interface RuleTakeOptions extends RuleOptions {
  /** Rule IDs travel as JSON only. */
  readonly format?: 'json';
  readonly block?: number;
}

export type StreamOptions = Omit<IdStreamOptions, 'app' | 'salt'>;
export type RuleStreamOptions = Omit<IdStreamOptions, 'key' | 'format'> & RuleOptions & { readonly format?: 'json' };

/** The largest batch of GET /v1/ids. */
const HTTP_BATCH = 10_000;

type AnyOptions = {
  key?: string;
  app?: string;
  salt?: string;
  format?: Format;
  block?: number;
  idempotencyKey?: string;
};

/**
 * Codes after which a keyed call is sent again: the server or the connection failed, and the key
 * makes a retry safe; or an earlier attempt under the key is still being served (IN_FLIGHT), whose
 * answer the retry gets.
 */
const RETRIED = new Set(['UNAVAILABLE', 'TIMEOUT', 'DISCONNECTED', 'IDEMPOTENCY_KEY_IN_FLIGHT']);
/** The first pause before a retry, doubled each time; a Retry-After the server sent wins, up to MAX_PAUSE_MS. */
const FIRST_PAUSE_MS = 50;
const MAX_PAUSE_MS = 2000;

export class IdmintClient {
  private readonly timeoutMs: number;
  private readonly maxInFlight: number;
  private readonly retries: number;
  private conn?: StreamConnection;
  private opening?: Promise<StreamConnection>;
  private active = 0;
  private readonly queue: (() => void)[] = [];

  constructor(private readonly opts: IdmintClientOptions) {
    new URL(opts.url); // a bad URL fails here, not on first use
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.maxInFlight = Math.max(1, opts.maxInFlight ?? 8);
    this.retries = Math.max(0, opts.retries ?? 3);
  }

  /** One ID over HTTP. */
  id(tag: string, opts?: IdOptions): Promise<bigint>;
  id(tag: string, opts: RuleOptions): Promise<string>;
  async id(tag: string, opts: AnyOptions = {}): Promise<bigint | string> {
    const body = (await this.sendKeyed(opts, () => this.get(`/v1/id/${encodeURIComponent(tag)}`, opts))) as {
      id?: unknown;
    };
    if (typeof body.id !== 'string') throw new IdmintClientError('PROTOCOL', 'the answer has no id');
    return opts.app !== undefined ? body.id : BigInt(body.id);
  }

  /**
   * `count` IDs over HTTP, ascending, in batches of up to 10000 (use take() for bulk); with an idempotencyKey, one
   * request.
   */
  ids(tag: string, count: number, opts?: IdOptions): Promise<bigint[]>;
  ids(tag: string, count: number, opts: RuleOptions): Promise<string[]>;
  async ids(tag: string, count: number, opts: AnyOptions = {}): Promise<bigint[] | string[]> {
    checkCount(count);
    const out: string[] = [];
    // A keyed call is one request (at most 1000 IDs): its answer is what the key keeps.
    const batch = opts.idempotencyKey !== undefined ? count : HTTP_BATCH;
    for (let left = count; left > 0; ) {
      const size = Math.min(left, batch);
      const body = (await this.sendKeyed(opts, () =>
        this.get(`/v1/ids/${encodeURIComponent(tag)}`, { ...opts, count: size }),
      )) as { ids?: unknown };
      if (!Array.isArray(body.ids) || body.ids.length !== size)
        throw new IdmintClientError('PROTOCOL', `expected ${size} ids`);
      for (const id of body.ids as string[]) out.push(id);
      left -= size;
    }
    return opts.app !== undefined ? out : out.map((s) => BigInt(s));
  }

  /** `count` IDs over the websocket stream, in one take. */
  take(tag: string, count: number, opts?: TakeOptions): Promise<bigint[]>;
  take(tag: string, count: number, opts: RuleTakeOptions): Promise<string[]>;
  async take(tag: string, count: number, opts: AnyOptions = {}): Promise<bigint[] | string[]> {
    checkCount(count);
    const req: TakeRequest = {
      tag,
      count,
      format: opts.format ?? (opts.app !== undefined ? 'json' : 'binary'),
      block: opts.block,
      key: opts.key,
      app: opts.app,
      salt: opts.salt,
      idempotencyKey: opts.idempotencyKey,
    };
    return this.sendKeyed(opts, () => this.takeOnce(req));
  }

  private async takeOnce(req: TakeRequest): Promise<bigint[] | string[]> {
    await this.slot();
    try {
      const conn = await this.connection();
      return await new Promise<bigint[] | string[]>((resolve, reject) => {
        const out: (bigint | string)[] = [];
        conn.take(req, {
          ids: (ids) => {
            for (let i = 0; i < ids.length; i++) out.push(ids[i]);
          },
          done: () => resolve(out as bigint[] | string[]),
          fail: reject,
        });
      });
    } finally {
      this.release();
    }
  }

  /**
   * An endless async iterator over the tag's IDs, served from a local buffer kept topped up
   * over a socket of its own; it reconnects after a drop and never yields an ID twice.
   * Stop it with `break` or close().
   */
  stream(tag: string, opts?: StreamOptions): IdStream<bigint>;
  stream(tag: string, opts: RuleStreamOptions): IdStream<string>;
  stream(tag: string, opts: IdStreamOptions = {}): IdStream<bigint> | IdStream<string> {
    return opts.app !== undefined
      ? new IdStream<string>(this.streamContext(), tag, opts)
      : new IdStream<bigint>(this.streamContext(), tag, opts);
  }

  /** Closes the shared socket of take(); takes in flight fail with DISCONNECTED. */
  close(): void {
    this.conn?.close();
    this.conn = undefined;
  }

  private streamContext() {
    return { url: this.opts.url, headers: this.opts.headers, timeoutMs: this.timeoutMs };
  }

  private connection(): Promise<StreamConnection> {
    if (this.conn?.open) return Promise.resolve(this.conn);
    this.opening ??= StreamConnection.open(this.opts.url, { headers: this.opts.headers, timeoutMs: this.timeoutMs })
      .then((c) => (this.conn = c))
      .finally(() => (this.opening = undefined));
    return this.opening;
  }

  private slot(): Promise<void> {
    if (this.active < this.maxInFlight) {
      this.active++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.queue.push(resolve));
  }

  private release(): void {
    const next = this.queue.shift();
    if (next) next();
    else this.active--;
  }

  /**
   * Runs a call; with an idempotency key, runs it again (same key) after a transient failure,
   * at most `retries` times, pausing as the server's Retry-After says or doubling from 50 ms.
   */
  private async sendKeyed<T>(opts: Idempotent, call: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await call();
      } catch (err) {
        const error = err as IdmintClientError;
        if (
          opts.idempotencyKey === undefined ||
          attempt >= this.retries ||
          !(error instanceof IdmintClientError) ||
          !RETRIED.has(error.code)
        )
          throw err;
        const pause = error.retryAfter !== undefined ? error.retryAfter * 1000 : FIRST_PAUSE_MS * 2 ** attempt;
        await new Promise((resolve) => setTimeout(resolve, Math.min(pause, MAX_PAUSE_MS)));
      }
    }
  }

  private async get(path: string, query: Record<string, string | number | undefined>): Promise<unknown> {
    const url = new URL(this.opts.url);
    url.pathname = `${url.pathname.replace(/\/+$/, '')}${path}`;
    const headers: Record<string, string> = { accept: 'application/json', ...this.opts.headers };
    for (const [name, value] of Object.entries(query)) {
      if (value === undefined || name === 'format' || name === 'block') continue;
      if (name === 'idempotencyKey') headers['idempotency-key'] = String(value);
      else url.searchParams.set(name, String(value));
    }
    let res: Response;
    try {
      res = await fetch(url, { headers, signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (err) {
      const timeout = (err as Error).name === 'TimeoutError';
      throw new IdmintClientError(timeout ? 'TIMEOUT' : 'DISCONNECTED', `${url.origin}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    const body = (await res.json().catch(() => undefined)) as
      | { error?: { code?: string; message?: string } }
      | undefined;
    if (!res.ok) {
      const retryAfter = Number(res.headers.get('retry-after') ?? NaN);
      throw new IdmintClientError(body?.error?.code ?? 'PROTOCOL', body?.error?.message ?? `HTTP ${res.status}`, {
        status: res.status,
        retryAfter: Number.isFinite(retryAfter) ? retryAfter : undefined,
      });
    }
    if (body === undefined) throw new IdmintClientError('PROTOCOL', 'the answer is not JSON');
    return body;
  }
}

function checkCount(count: number): void {
  if (!Number.isSafeInteger(count) || count < 1) throw new RangeError(`count must be a positive integer, got ${count}`);
}
