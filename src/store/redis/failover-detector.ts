// The subscriptions of ioredis's failover detector (failoverDetector: true, connection.ts), kept
// without ever leaving a rejection unhandled. The detector listens for +switch-master on each
// sentinel over connections of its own, which reconnect after a sentinel went away
// (sentinelReconnectStrategy) and then subscribe again by themselves, with nobody to hear how
// that SUBSCRIBE ends: when the detector is cleaned up while it is in flight (the connection it
// serves closes, fails over or reconnects while the sentinel is slow to answer), the command is
// rejected with "Connection is closed." and the rejection is unhandled, which ends a process
// (ioredis 6.0, readyHandler in `built/redis/event_handler.js`). So each time a connection sets
// up its detector, the detector's connections subscribe again through subscription.ts instead,
// which hears every end: a failure on a sentinel connection still open is tried again. Their
// errors (a sentinel away) are listened to, not printed by ioredis at every attempt.
import type { Redis } from 'ioredis';
import { resubscribeOnReady } from './subscription.js';

/** The channel the sentinels announce a new master on. */
const SWITCH_MASTER = '+switch-master';

/** Resubscriptions of detector connections that failed in this process (tests read it). */
export const detectorResubscriptions = { failed: 0 };

/** The part of ioredis's Sentinel connector this module reads: its detector's sentinel connections. */
interface DetectorHost {
  readonly connector?: { readonly failoverDetector?: { readonly sentinels: readonly { client: Redis }[] } | null };
}

/**
 * Makes every failover detector `redis` sets up (one per connect) resubscribe its sentinel
 * connections itself, hearing how each resubscription ends.
 */
export function guardFailoverDetector(redis: Redis): void {
  // Emitted by the connector once a new detector's first subscriptions were made.
  redis.on('failoverSubscribed', () => {
    const detector = (redis as unknown as DetectorHost).connector?.failoverDetector;
    for (const { client } of detector?.sentinels ?? []) {
      // A sentinel gone away: its connection is tried again (sentinelReconnectStrategy), and what
      // readiness reports is the state of the connection served. ioredis would print every failed
      // attempt to stderr with no listener.
      client.on('error', () => undefined);
      resubscribeOnReady(
        client,
        SWITCH_MASTER,
        () => undefined,
        () => {
          detectorResubscriptions.failed++;
        },
      );
    }
  });
}
