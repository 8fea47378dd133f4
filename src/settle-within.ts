// Waiting for something that may never settle, for a bounded time: the value of p, or
// `otherwise` when p fails or has not settled within ms. p goes on in the background.
export function settleWithin<T>(p: Promise<T>, ms: number, otherwise: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(otherwise), ms);
  });
  return Promise.race([p.catch(() => otherwise), late]).finally(() => clearTimeout(timer));
}
