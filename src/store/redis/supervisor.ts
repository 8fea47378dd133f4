// Keeps every Redis connection of a node open until the node itself closes it. ioredis's `end`
// is final: nothing reconnects after it. Its own retries never give up (retryStrategy always
// returns a delay), but one path ends a connection anyway: a Sentinel-managed connection whose
// failover detector hears +switch-master while the connection is asking the sentinels for the
// master (between reconnects) has its connector's `disconnect()` run mid-loop; the loop then
// rejects with "Connection is closed.", and `Redis.connect()` sets `end` on any rejection of
// its connector (ioredis 6.0 `built/Redis.js`, `SentinelConnector.connect`). A busy machine
// makes that window wide: each ask waits on a sentinel that is slow to answer.
//
// A watched connection that reaches `end` without idmint having asked (quit() or disconnect()
// on it, by idmint or by BullMQ closing what it opened) is opened again on the same object, so
// every holder of it (BullMQ queues and workers, the segment store, the registry's subscriber)
// goes on using it: after a backoff that grows per attempt, until it is ready. One warning per
// episode, one info line when it is back, and idmint_connection_restarts_total{server,role}
// counts the episodes. Connections a watched one duplicates (BullMQ's blocking connections) are
// watched too. While a connection is ended (`reopening()`) or, for a node's own roles, not
// ready (`notReady()`), it is named: /readyz and the admin page show it, and readiness is not given over it.
import type { Logger } from 'pino';
import { isCluster, type RedisClient } from './connection.js';

/** Closes the sentinel subscriptions of an ended Sentinel-managed connection's failover detector. */
function releaseFailoverDetector(client: RedisClient): void {
  if (isCluster(client) || client.status !== 'end') return;
  const connector = (client as unknown as { connector?: { failoverDetector?: { cleanup(): void } | null } }).connector;
  connector?.failoverDetector?.cleanup();
}

/** Reopen delay for attempt n (1, 2, ...): 100 ms doubling, at most 5 s. */
export function reopenDelayMs(attempt: number): number {
  return Math.min(100 * 2 ** Math.min(attempt - 1, 10), 5000);
}

export interface ConnectionState {
  readonly server: string;
  readonly role: string;
  /** ioredis's status now. */
  readonly status: string;
  /** Set while the connection ended by itself and is being opened again. */
  readonly reopening?: { readonly attempts: number; readonly downMs: number; readonly reason: string };
}

interface Watched {
  readonly client: RedisClient;
  readonly server: string;
  readonly role: string;
  /** Readiness waits for it to be ready (a node's own connections; not BullMQ's duplicates). */
  readonly required: boolean;
  /** idmint (or BullMQ) closed it: an `end` is expected. */
  closedOnPurpose: boolean;
  lastError?: string;
  episode?: { since: number; attempts: number; reason: string; timer?: NodeJS.Timeout };
}

type Patched = {
  disconnect(reconnect?: boolean): void;
  quit(): Promise<unknown>;
  connect(): Promise<void>;
  duplicate(...args: unknown[]): RedisClient;
};

export class ConnectionSupervisor {
  private readonly watched = new Set<Watched>();
  private stopped = false;

  constructor(
    private readonly log: Logger,
    private readonly onRestart: (server: string, role: string) => void = () => undefined,
    /** Called for every connection watched: a counter can start its series at 0. */
    private readonly onWatch: (server: string, role: string) => void = () => undefined,
  ) {}

  /** Watches client (and whatever it duplicates) from now until it is closed on purpose. */
  watch(client: RedisClient, server: string, role: string, required = true): RedisClient {
    const entry: Watched = { client, server, role, required, closedOnPurpose: false };
    this.watched.add(entry);
    this.onWatch(server, role);
    const patched = client as unknown as Patched;
    const { disconnect, quit, connect, duplicate } = patched;
    patched.disconnect = (reconnect?: boolean) => {
      if (!reconnect) entry.closedOnPurpose = true;
      disconnect.call(client, reconnect);
    };
    patched.quit = () => {
      entry.closedOnPurpose = true;
      return quit.call(client);
    };
    patched.connect = () => {
      entry.closedOnPurpose = false;
      return connect.call(client);
    };
    patched.duplicate = (...a: unknown[]) => this.watch(duplicate.apply(client, a), server, `${role}-blocking`, false);
    client.on('error', (err: Error) => {
      entry.lastError = err.message;
    });
    client.on('ready', () => this.back(entry));
    client.on('end', () => this.ended(entry, connect));
    return client;
  }

  /** A connection of server that ended by itself and is being opened again, or undefined. */
  reopening(server: string): string | undefined {
    for (const entry of this.watched) {
      if (entry.server === server && entry.episode)
        return `${entry.role} connection ended (${entry.episode.reason}); reopening, attempt ${entry.episode.attempts}`;
    }
    return undefined;
  }

  /** A node's own connection of server (not BullMQ's duplicates) that is not ready now, or undefined. */
  notReady(server: string): string | undefined {
    for (const entry of this.watched) {
      if (entry.server === server && entry.required && !entry.closedOnPurpose && entry.client.status !== 'ready')
        return `${entry.role} connection ${entry.client.status}`;
    }
    return undefined;
  }

  /** The watched connections of server, by role (not those that ended on purpose). */
  clients(server: string): { role: string; client: RedisClient }[] {
    return [...this.watched]
      .filter((w) => w.server === server && !w.closedOnPurpose)
      .map((w) => ({ role: w.role, client: w.client }));
  }

  /** Every watched connection of server, with its status and any reopening under way. */
  states(server: string): ConnectionState[] {
    const now = performance.now();
    return [...this.watched]
      .filter((w) => w.server === server)
      .map((w) => ({
        server,
        role: w.role,
        status: w.client.status,
        ...(w.episode
          ? {
              reopening: {
                attempts: w.episode.attempts,
                downMs: Math.round(now - w.episode.since),
                reason: w.episode.reason,
              },
            }
          : {}),
      }));
  }

  /** Shutdown: nothing is opened again from now on. */
  stop(): void {
    this.stopped = true;
    for (const entry of this.watched) if (entry.episode?.timer) clearTimeout(entry.episode.timer);
  }

  private ended(entry: Watched, connect: () => Promise<void>): void {
    if (entry.closedOnPurpose || this.stopped) {
      releaseFailoverDetector(entry.client);
      this.watched.delete(entry);
      if (entry.episode?.timer) clearTimeout(entry.episode.timer);
      return;
    }
    if (!entry.episode) {
      const reason = entry.lastError ?? 'ended';
      entry.episode = { since: performance.now(), attempts: 0, reason };
      this.log.warn(
        { server: entry.server, role: entry.role, reason },
        'Redis connection ended for good; opening it again with backoff until it is ready',
      );
      this.onRestart(entry.server, entry.role);
    }
    const episode = entry.episode;
    episode.attempts++;
    episode.timer = setTimeout(() => {
      episode.timer = undefined;
      // Someone else (BullMQ, for its blocking connections) may have opened it meanwhile.
      if (this.stopped || entry.closedOnPurpose || entry.client.status !== 'end') return;
      // A failure ends it again: the next 'end' schedules the next attempt.
      connect.call(entry.client).catch(() => undefined);
    }, reopenDelayMs(episode.attempts));
    episode.timer.unref();
  }

  private back(entry: Watched): void {
    const episode = entry.episode;
    if (!episode) return;
    entry.episode = undefined;
    this.log.info(
      {
        server: entry.server,
        role: entry.role,
        attempts: episode.attempts,
        downMs: Math.round(performance.now() - episode.since),
      },
      'Redis connection open again',
    );
  }
}
