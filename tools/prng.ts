// A small seeded PRNG (mulberry32) for property-style tests: a failing case prints its seed
// and replays exactly.

export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [lo, hi] (inclusive). */
  int(lo: number, hi: number): number;
  /** Uniform bigint in [0, 2^bits). */
  bits(bits: number): bigint;
  pick<T>(xs: readonly T[]): T;
}

export function rng(seed: number): Rng {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  return {
    next,
    int,
    bits(bits: number) {
      let v = 0n;
      for (let left = bits; left > 0; left -= 16) {
        const w = Math.min(16, left);
        v = (v << BigInt(w)) | BigInt(int(0, 2 ** w - 1));
      }
      return v;
    },
    pick: (xs) => xs[int(0, xs.length - 1)],
  };
}

/** The seed for this run: SEED from the environment, or a fixed default. */
export const SEED = Number(process.env.SEED ?? 20240611);
