// Checks of lists of IDs shared by the gRPC tests: decimal IDs as bigints, strictly increasing, without repeats.

/** The decimal IDs of an answer as bigints. */
export const big = (xs: string[]) => xs.map(BigInt);
/** Whether every ID is larger than the one before it. */
export const ascending = (xs: bigint[]) => xs.every((v, i) => i === 0 || v > xs[i - 1]);
/** Whether no value appears twice. */
export const unique = <T>(xs: T[]) => new Set(xs).size === xs.length;
