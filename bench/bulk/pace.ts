// The pace of a bare bulk stream (bare-stream.ts, bare-grpc-stream.ts): BARE_STREAM_RATE IDs a
// second across every take of the process, 0 for as fast as the reader takes them.
import { setTimeout as sleep } from 'node:timers/promises';

const rate = Number(process.env.BARE_STREAM_RATE ?? 0);
/** When the next block is due (performance.now(), ms). */
let due = 0;

/** Resolves when a block of `size` IDs may be written at the rate. */
export async function paced(size: number): Promise<void> {
  if (rate <= 0) return;
  const now = performance.now();
  if (due > now) await sleep(due - now);
  // No catching up past a few milliseconds: a stall is not followed by a burst.
  due = Math.max(due, performance.now() - 5) + (size / rate) * 1000;
}
