// Fitting the requests of an exhausted tag into the IDs it has left: the waiters at the head of
// the queue that fit are served, in order; one that does not is refused whole (a waiter is
// never left holding part of what it asked for), and the IDs it already held go on to
// waiters that were waiting when they were taken and that they fit whole.
import { IdmintError } from '../errors.js';
import { received, type Waiter, type WaiterQueue } from './waiter-queue.js';

/** Fits the waiters at the head of the queue into the `left` IDs an exhausted tag has left. */
export function fitExhausted(queue: WaiterQueue, left: number, tag: string): void {
  const waiting = queue.waiting;
  while (waiting.length > 0 && waiting[0].min - received(waiting[0]) > left) {
    const waiter = waiting.shift()!;
    // No count: how many IDs are left tells how many were issued, which a permuted tag hides
    // (the admin API shows it to the admin and viewer).
    waiter.sink.failed(
      new IdmintError(
        'ID_SPACE_EXHAUSTED',
        `tag "${tag}" is exhausted: it reached its limit${left > 0 ? ', with fewer IDs left than asked' : ''}`,
      ),
    );
    passOn(queue, waiter);
  }
  if (waiting.length > 0 && waiting[0].need > left) {
    const waiter = waiting[0];
    waiter.need = left;
    if (waiter.need === 0) {
      waiting.shift();
      waiter.sink.served(waiter.got);
    }
  }
}

/**
 * A refused waiter already held part of its IDs (taken before the limit was known): they go
 * to the waiters that were already waiting when those IDs were taken and that they fit
 * whole, in order. A waiter that arrived later could have started after a higher ID was
 * answered elsewhere, so it never gets them. What nobody can use is a gap.
 */
function passOn(queue: WaiterQueue, from: Waiter): void {
  if (from.got.length === 0 || from.gotAt === undefined) return;
  const waiting = queue.waiting;
  const spare = [...from.got];
  let count = received(from);
  for (let i = 0; i < waiting.length && count > 0; ) {
    const waiter = waiting[i];
    if (waiter.arrived >= from.gotAt || waiter.got.length > 0 || waiter.need > count) {
      i++;
      continue;
    }
    let need = waiter.need;
    while (need > 0) {
      const [first, last] = spare[0];
      const given = Math.min(need, last - first + 1);
      if (waiter.got.length === 0) waiter.gotAt = from.gotAt;
      waiter.got.push([first, first + given - 1]);
      if (first + given - 1 === last) spare.shift();
      else spare[0] = [first + given, last];
      need -= given;
    }
    count -= waiter.need;
    waiter.need = 0;
    waiting.splice(i, 1);
    waiter.sink.served(waiter.got);
  }
}
