// Timeouts that a pause of this process cannot trip by itself. A process stopped by SIGSTOP,
// a long garbage collection or a frozen VM wakes with its timers overdue and the replies it
// was waiting for already in the kernel's socket buffers. Node runs due timers before it
// reads sockets, so a plain timeout would call late a reply that is there, and a connection
// "silent" that has in fact answered. A late timeout lets one poll phase run first (timers,
// then poll, then setImmediate): input that arrived by then is read, and fn, which checks
// whether what it guards is still pending, finds it settled.

/**
 * setTimeout(fn, ms), except that fn runs after the sockets have been read once more. The
 * handle is a plain timer: clearTimeout cancels it while it is not yet due; once due, fn
 * runs and must find out for itself whether it still has anything to do.
 */
export function lateTimeout(fn: () => void, ms: number): NodeJS.Timeout {
  return setTimeout(() => setImmediate(fn), ms);
}

/**
 * Races work against a late timeout: rejects with error() when work has not settled once
 * lateTimeout(ms) is due (a result read in that last poll phase still wins).
 */
export async function withinLate<T>(work: Promise<T>, ms: number, error: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = lateTimeout(() => reject(error()), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
