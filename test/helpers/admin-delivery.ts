// When an admin change is visible at a node, for the admin-consistency tests: at once after
// the admin call on the process that made it, and on another process once the announcement is
// delivered there (waited for with a marker published on every server of its Redis). A burst
// is fired at that very moment.
import type { Node } from '../../src/process/serve.js';
import { isCluster } from '../../src/store/redis/connection.js';
import { Burst, type Outcomes } from './admin-burst.js';

/** Waits for the delivery of an announcement of tag at node, calls fn at once, and answers what it returned. */
export function onDelivery<T>(node: Node, tag: string, fn: () => T): Promise<{ readonly value: T }> {
  return new Promise((resolve) => {
    const onMessage = (_ch: string, t: string) => {
      if (t !== tag) return;
      node.rt.subscriber.off('message', onMessage);
      resolve({ value: fn() });
    };
    node.rt.subscriber.on('message', onMessage);
  });
}

let markers = 0;

/**
 * Resolves once every announcement published before the call has been delivered at node: a
 * marker (no tag's name) published on every server of its Redis comes after them, for a
 * subscriber gets what one server publishes in the order it ran the PUBLISHes.
 */
export async function announcementsDelivered(node: Node): Promise<void> {
  const channel = node.rt.keys.tagsChanged();
  const servers = isCluster(node.rt.redis) ? node.rt.redis.nodes('master') : [node.rt.redis];
  const pending = new Set(servers.map(() => `~delivered-${++markers}`));
  const names = [...pending];
  const delivered = new Promise<void>((resolve) => {
    const onMessage = (ch: string, t: string) => {
      if (ch !== channel || !pending.delete(t) || pending.size > 0) return;
      node.rt.subscriber.off('message', onMessage);
      resolve();
    };
    node.rt.subscriber.on('message', onMessage);
  });
  await Promise.all(servers.map((server, i) => server.publish(channel, names[i])));
  await delivered;
}

/**
 * Makes the change (through `node` when `where` is 'same', else through another process) and
 * answers the outcomes of a burst sent at `node` as soon as the change is visible there: the
 * admin call's answer, or the delivery of the announcement (fired from the listener right
 * after the registry's own, before anything else runs).
 */
export async function afterChange(
  where: 'same' | 'other',
  node: Node & { url: string },
  tag: string,
  burst: Burst,
  change: () => Promise<void>,
): Promise<Outcomes> {
  if (where === 'same') {
    await change();
    return burst.fire();
  }
  // The announcements of the preparation are delivered first.
  await announcementsDelivered(node);
  const fired = onDelivery(node, tag, () => burst.fire());
  await change();
  return await (await fired).value;
}
