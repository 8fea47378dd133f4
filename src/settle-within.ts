// Waiting for something that may never settle, for a bounded time: the value of `promise`, or
// `otherwise` when it fails or has not settled within ms. `promise` goes on in the background.
export function settleWithin<T>(promise: Promise<T>, ms: number, otherwise: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(otherwise), ms);
  });
  return Promise.race([promise.catch(() => otherwise), late]).finally(() => clearTimeout(timer));
}
