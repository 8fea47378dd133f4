// The soak run's command-line options (`npm run soak -- --minutes N ...`), read with the
// toolkit's option reader.
import { readOptions } from '../../tools/args.js';

export interface SoakOptions {
  /** Length of the run. */
  readonly minutes: number;
  /** Seconds between samples of the server. */
  readonly every: number;
  /** Seconds between admin changes (create, PATCH, delete). */
  readonly adminEvery: number;
  /** Scales the request rate of every load loop. */
  readonly rate: number;
  /** Where the samples go (JSON); the chart goes beside it (.svg). */
  readonly out: string;
  /** Largest growth allowed after the warm-up, MB per minute (RSS and heap each). */
  readonly maxSlope: number;
  /** Largest distance of a sample after the warm-up from the plateau, as a fraction of it. */
  readonly band: number;
}

const USAGE =
  'npm run soak -- --minutes N [--every S] [--admin-every S] [--rate X] [--out file.json] [--max-slope MB_PER_MIN] [--band FRACTION]';

export function soakOptions(argv: readonly string[], now = new Date()): SoakOptions {
  let minutes: number | undefined;
  let every: number | undefined;
  let adminEvery = 3;
  let rate = 1;
  let out: string | undefined;
  let maxSlope = 1;
  let band = 0.1;
  readOptions(argv, USAGE, (o) => {
    if (o.flag === '--minutes') minutes = o.number(0.05, 24 * 60);
    else if (o.flag === '--every') every = o.number(0.5, 600);
    else if (o.flag === '--admin-every') adminEvery = o.number(0.5, 600);
    else if (o.flag === '--rate') rate = o.number(0.01, 100);
    else if (o.flag === '--out') out = o.text();
    else if (o.flag === '--max-slope') maxSlope = o.number(0);
    else if (o.flag === '--band') band = o.number(0, 10);
    else return false;
    return true;
  });
  if (minutes === undefined) throw new Error(`--minutes is required\nusage: ${USAGE}`);
  // Every 5 s; a short run samples more often so that it still has about 30 samples.
  const autoEvery = Math.min(5, Math.max(0.5, (minutes * 60) / 30));
  const stamp = now.toISOString().slice(0, 19).replace(/[-:]/g, '').replace('T', '-');
  return {
    minutes,
    every: every ?? autoEvery,
    adminEvery,
    rate,
    out: out ?? `bench/results/soak-${stamp}.json`,
    maxSlope,
    band,
  };
}
