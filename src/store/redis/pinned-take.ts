// The take script without its INFO server read: a copy of take-2.lua whose run id is a
// constant, loaded into one Redis server process only, so that wherever it runs, the run id
// it compares hashes with is that of the process running it. The safety argument is in
// docs/GUARANTEES.md ("What a take costs"); in short:
//   - the copy is loaded by SCRIPT LOAD on a connection of its own that never reconnects and
//     never resends, right after INFO server read the run id on that same connection: one
//     TCP connection reaches one server process, so the copy naming run id R is only ever
//     in the script cache of the process whose run id is R;
//   - Redis 7 neither replicates nor persists its script cache (not in RDB, AOF or to
//     replicas), so a restart from a snapshot, a promoted replica or another cluster node
//     does not have the copy: EVALSHA answers NOSCRIPT there, and the call goes to the full
//     script (take-2.lua, reading INFO server), never to the copy's text;
//   - a take is never sent as EVAL of the copy, so no resend, offline queue or redirection
//     can put the copy into another process's cache.
// Used on a single Redis server; on a Redis Cluster the full script runs.
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/**
 * The run id read of take-2.lua (in includes/server-run-id.lua, expanded into the script
 * once); the copy replaces it with a constant.
 */
export const RUN_ID_READ = "string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')";

/** The take script with the server's run id as a constant (only for that server's cache). */
export function pinnedTakeText(lua: string, runId: string): string {
  if (!/^[0-9a-f]{40}$/.test(runId)) throw new Error(`not a Redis run id: ${runId}`);
  const parts = lua.split(RUN_ID_READ);
  if (parts.length !== 2) throw new Error('the take script must read the run id exactly once');
  return parts.join(`'${runId}'`);
}

/** Sends take-2.lua's keys and arguments (see its header) and answers its raw reply. */
export type TakeFn = (segment: string, moved: string, n: number, gen: string, prefetch: number, epoch: number) => Promise<unknown>;

/** Waits after a failed load before trying again (the full script runs meanwhile). */
const RETRY_MS = 1000;

export class PinnedTake {
  private sha?: string;
  private loading?: Promise<void>;
  private retryAt = 0;
  /** Set when the server is older than Redis 7 (it replicates its script cache). */
  private unsupported = false;
  /** Calls of each path, for tests and the bench. */
  readonly counts = { pinned: 0, full: 0, loads: 0 };

  constructor(
    private readonly redis: Redis,
    private readonly lua: string,
    private readonly full: TakeFn,
  ) {}

  /** take-2.lua's keys and arguments (see TakeFn); the raw reply of the copy or the full script. */
  async call(segment: string, moved: string, n: number, gen: string, prefetch: number, epoch: number): Promise<unknown> {
    const sha = this.sha;
    if (sha !== undefined) {
      try {
        const r = await this.redis.evalsha(sha, 2, segment, moved, n, gen, prefetch, epoch);
        this.counts.pinned++;
        return r;
      } catch (err) {
        if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
        // Another process answers now (restart, failover) or its cache was flushed: the copy
        // is never sent again; a new one is made for whichever process answers.
        if (this.sha === sha) this.sha = undefined;
      }
    }
    this.load();
    this.counts.full++;
    return this.full(segment, moved, n, gen, prefetch, epoch);
  }

  /** Starts loading a copy for the process now at the server's address (once at a time). */
  private load(): void {
    if (this.loading || this.unsupported || Date.now() < this.retryAt) return;
    this.loading = this.loadOnce()
      .catch(() => {
        this.retryAt = Date.now() + RETRY_MS;
      })
      .finally(() => {
        this.loading = undefined;
      });
  }

  private async loadOnce(): Promise<void> {
    // One TCP connection, one server process: no reconnect, no resend, no offline queue, so
    // INFO and SCRIPT LOAD both run on the process behind this socket, or fail.
    const conn = this.redis.duplicate({
      lazyConnect: true,
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      reconnectOnError: () => false,
    });
    conn.on('error', () => undefined);
    try {
      await conn.connect();
      const socket = conn.stream;
      const info = await conn.info('server');
      const runId = /\brun_id:([0-9a-f]{40})/.exec(info)?.[1];
      const major = Number(/\bredis_version:(\d+)/.exec(info)?.[1]);
      if (!runId || !(major >= 7)) {
        this.unsupported = true;
        return;
      }
      const text = pinnedTakeText(this.lua, runId);
      const sha = String(await conn.script('LOAD', text));
      if (conn.stream !== socket || sha !== createHash('sha1').update(text).digest('hex')) throw new Error('pinned take: connection changed');
      this.counts.loads++;
      this.sha = sha;
    } finally {
      conn.disconnect();
    }
  }
}
