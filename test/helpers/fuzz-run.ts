// The size and seed of a fuzz run and the tags it runs against. FUZZ_RUNS scales the number of
// generated cases (`npm run fuzz` runs many more); FUZZ_SEED (and FUZZ_PATH, both printed by
// fast-check when a property fails) replays a failing run; the seed is printed at the start.
import fc from 'fast-check';

/** Cases per property: HTTP requests and UDP datagrams; websocket sessions a fifteenth (each sends up to 12 frames). */
export const RUNS = Number(process.env.FUZZ_RUNS ?? '') || 4000;
export const HTTP_RUNS = RUNS;
export const UDP_RUNS = RUNS;
export const WS_RUNS = Math.ceil(RUNS / 15);
/** The seed of every property of this run: FUZZ_SEED replays one (printed at the start). */
export const SEED =
  process.env.FUZZ_SEED === undefined || process.env.FUZZ_SEED === ''
    ? (Date.now() ^ (Math.random() * 0x7fffffff)) | 0
    : Number(process.env.FUZZ_SEED);
export const PATH = process.env.FUZZ_PATH || undefined;
console.log(`fuzz seed ${SEED}: FUZZ_SEED=${SEED} replays this run (with FUZZ_PATH from a failure, its case)`);
/** fast-check options of a property: the run's seed, and the path to replay when given. */
export const params = (numRuns: number): fc.Parameters<unknown> => ({
  numRuns: Math.max(1, Math.round(numRuns)),
  includeErrorInReport: true,
  seed: SEED,
  ...(PATH === undefined ? {} : { path: PATH }),
});

export const REQUEST_TIMEOUT_MS = 5000;
export const STREAM_MAX_COUNT = 100_000;
export const UDP_MAX_BYTES = 8192;
export const MAX_SAFE = 2n ** 53n - 1n;
export const MAX_I63 = 2n ** 63n - 1n;

// ---- the tags ----

/** Tags the ID routes are fuzzed against, with how a valid ID of each looks. */
export const ID_TAGS: Record<string, (id: string) => boolean> = {
  seg: (id) => /^[1-9]\d*$/.test(id) && BigInt(id) <= MAX_SAFE,
  nodeo: (id) => /^[1-9]\d*$/.test(id) && BigInt(id) <= MAX_SAFE,
  // Interleaved: stride 2, offset 1, so odd.
  odd: (id) => /^[1-9]\d*$/.test(id) && BigInt(id) <= MAX_SAFE && BigInt(id) % 2n === 1n,
  locked: (id) => /^[1-9]\d*$/.test(id) && BigInt(id) <= MAX_SAFE,
  // shards 8 (3 bits) over app_bits 8 with app_id 3: the low byte of every ID is 3.
  shard: (id) => /^[1-9]\d*$/.test(id) && BigInt(id) <= MAX_SAFE && (BigInt(id) & 0xffn) === 3n,
  tiny: (id) => /^[1-9]\d*$/.test(id) && BigInt(id) <= 60n,
  sf: (id) => /^[1-9]\d*$/.test(id) && BigInt(id) <= MAX_I63,
  off: () => false,
  rule: (id) => /^\d{8}-\d{9}$/.test(id),
  salty: (id) => /^[A-Za-z0-9_.-]{1,64}-\d{8}-[A-Za-z0-9_.-]{0,64}\d{9}$/.test(id),
};
export const RULE_TAGS = new Set(['rule', 'salty']);
/** Tags the admin routes may change or delete (never the ID tags above). */
export const VICTIMS = ['adm-seg', 'adm-sf', 'adm-rule'];
export const MISSING = ['nope', 'missing-tag'];
/** The client token of the locked tag, once the node made it (the generators read it when they run). */
export let lockedToken = '';

export function setLockedToken(token: string): void {
  lockedToken = token;
}

// Counters wide enough that long runs never exhaust a day's counter (tiny is the exhausted tag).
export const RULE_DEF = {
  mode: 'rule',
  template: '{yyyy}{MM}{dd}-{counter:9}',
  min_counter: 0,
  max_counter: 999999999,
  reset_seconds: 86400,
  time_zone: 'UTC',
};
export const SALTY_DEF = {
  mode: 'rule',
  template: '{app}-{yyyy}{MM}{dd}-{salt}{counter:9}',
  min_counter: 0,
  max_counter: 999999999,
  reset_seconds: 86400,
  time_zone: 'UTC',
};
