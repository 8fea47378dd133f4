// fast-check settings shared by the model fuzz tests: IMPORT_FUZZ_SEED (and IMPORT_FUZZ_PATH,
// both printed when a property fails) replays a run; IMPORT_FUZZ_RUNS sets the number of
// scenarios (default 10,000 per system); IMPORT_FUZZ_FOCUS=<case> narrows a generator to one
// family of scenarios (see each test file).
import type fc from 'fast-check';

export const RUNS = Number(process.env.IMPORT_FUZZ_RUNS ?? 10_000);
export const FOCUS = process.env.IMPORT_FUZZ_FOCUS ?? '';

export function params<T>(runs = RUNS): fc.Parameters<T> {
  const seed =
    process.env.IMPORT_FUZZ_SEED === undefined
      ? (Date.now() ^ (Math.random() * 0x7fffffff)) | 0
      : Number(process.env.IMPORT_FUZZ_SEED);
  console.log(`model fuzz seed ${seed}: IMPORT_FUZZ_SEED=${seed} replays this property's run`);
  return {
    seed,
    numRuns: runs,
    ...(process.env.IMPORT_FUZZ_PATH ? { path: process.env.IMPORT_FUZZ_PATH } : {}),
    // The seed is in fast-check's message too; this names the variable that replays it.
    reporter: (out) => {
      if (out.failed) {
        throw new Error(
          `replay with IMPORT_FUZZ_SEED=${out.seed} IMPORT_FUZZ_PATH=${out.counterexamplePath}${FOCUS ? ` IMPORT_FUZZ_FOCUS=${FOCUS}` : ''}\n` +
            `counterexample (shrunk after ${out.numShrinks} steps): ${JSON.stringify(out.counterexample, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v))}\n` +
            `${out.errorInstance instanceof Error ? out.errorInstance.message : String(out.errorInstance)}`,
        );
      }
    },
  };
}
