// Keeping a connection subscribed to a channel across reconnects. ioredis resubscribes by
// itself (autoResubscribe), but sends that SUBSCRIBE with nobody to hear how it ends: when the
// connection is closed for good while it is in flight, the command is rejected with
// "Connection is closed." and the rejection is unhandled, which ends a process. That happens
// at a shutdown whose quit() comes while a reconnected subscriber's ready check is under way
// (ioredis 6.0, readyHandler in `built/redis/event_handler.js`). And a listener of 'ready' that
// re-reads what announcements would have told it may run before the subscription is back, so
// an announcement between the two goes unheard.
//
// So the subscription's owner subscribes again itself on every 'ready', hears how that ends,
// and is called back once Redis has answered the SUBSCRIBE: from then on no announcement is
// missed, and whatever was announced before it is re-read by the callback.
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';

/** Wait before subscribing again when a resubscription failed on a connection still open. */
export const RESUBSCRIBE_RETRY_MS = 1000;

/** The part of an ioredis connection this module uses (tests pass a stand-in). */
type Subscriber = Pick<Redis, 'subscribe' | 'on' | 'status'> & { readonly options?: { autoResubscribe?: boolean } };

/** How a resubscription made after a reconnect failed: `open` when the connection is still ready (tried again). */
export type ResubscribeFailed = (err: Error, open: boolean) => void;

/**
 * Subscribes client to channel again on every 'ready', in ioredis's stead (its own resubscription is
 * turned off on client), hearing how that ends: onResubscribed once Redis has answered; a failure on a
 * connection still ready is tried again after retryMs, one on a connection closing is left to the next
 * 'ready' (or to the close). Each failure is told to failed.
 */
export function resubscribeOnReady(
  client: Subscriber,
  channel: string,
  onResubscribed: () => void,
  failed: ResubscribeFailed,
  retryMs = RESUBSCRIBE_RETRY_MS,
): void {
  if (client.options) client.options.autoResubscribe = false;
  let retry: NodeJS.Timeout | undefined;
  const resubscribe = () => {
    clearTimeout(retry);
    retry = undefined;
    client.subscribe(channel).then(onResubscribed, (err: Error) => {
      const open = client.status === 'ready';
      failed(err, open);
      if (!open) return;
      retry = setTimeout(resubscribe, retryMs);
      retry.unref();
    });
  };
  client.on('ready', resubscribe);
}

/**
 * Subscribes client to channel now and after every reconnect (resubscribeOnReady); onResubscribed runs
 * each time a subscription made after a reconnect is in place. Resolves once the first subscription is
 * in place.
 */
export async function keepSubscribed(
  client: Subscriber,
  channel: string,
  onResubscribed: () => void,
  log: Pick<Logger, 'warn'>,
  retryMs = RESUBSCRIBE_RETRY_MS,
): Promise<void> {
  resubscribeOnReady(
    client,
    channel,
    onResubscribed,
    (err, open) => {
      if (open) log.warn({ channel, err: err.message }, 'could not subscribe again after a reconnect; trying again');
    },
    retryMs,
  );
  await client.subscribe(channel);
}
