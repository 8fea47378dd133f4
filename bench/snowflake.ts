// In-process snowflake generation rate, run by `npm run bench:snowflake`: idmint's generator
// (src/service/snowflake-generator.ts, the code every snowflake request runs, with a lease
// held) against @sapphire/snowflake's generate(), measured in the same run, alternating
// rounds, medians. Both generate 64-bit IDs of the Twitter layout (41-bit ms time).
//   sapphire       Snowflake#generate() in a loop: one bigint per call
//   idmint single  await generator.take(1) per ID: the path of one HTTP/UDP request
//   idmint batch   generator.take(1000): the path of a batch or a stream block
// Every ID of every case is checked to be strictly increasing. idmint's must be (the run fails
// otherwise); sapphire's increment wraps after 4096 IDs within one millisecond, so at this rate
// it repeats IDs: its violations are counted and reported, not fatal.
//
// Flags: --ids N (per round and case, default 2,000,000)  --rounds N (default 5)  --no-write
// Results: bench/results/snowflake-latest.md
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Snowflake } from '@sapphire/snowflake';
import { systemClock } from '../src/core/clock.js';
import { PRESETS } from '../src/core/snowflake-layout.js';
import type { Lease, LeaseManager } from '../src/service/lease-manager.js';
import { SnowflakeGenerator } from '../src/service/snowflake-generator.js';
import { markdownTable } from '../tools/table.js';
import { startRun } from './record.js';
import { readBenchOptions } from './common-options.js';

const args = process.argv.slice(2);
const opts = { ids: 2_000_000, rounds: 5, write: true };
readBenchOptions(
  args,
  'npm run bench:snowflake -- [--ids N] [--rounds N] [--no-write]',
  { rounds: [1], write: true },
  opts,
  (a) => {
    if (a.flag !== '--ids') return false;
    opts.ids = a.whole(1);
    return true;
  },
);
const N = opts.ids;
const ROUNDS = opts.rounds;
const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));

/** A lease held for the whole run: the generator checks it per ID exactly as in service. */
const lease: Lease = {
  bits: 10,
  workerId: 5,
  floorMs: 0,
  deadlineMs: Number.POSITIVE_INFINITY,
  generation: 1,
  issuedMaxMs: 0,
  unguardedFloorMs: 0,
};
const leases = { get: async () => lease, isValid: () => true } as unknown as LeaseManager;

function check(ids: bigint[], last: { v: bigint }): void {
  for (const id of ids) {
    if (id <= last.v) throw new Error(`ID ${id} after ${last.v}`);
    last.v = id;
  }
}

let sapphireViolations = 0;

const cases: Record<string, () => Promise<number>> = {
  async sapphire() {
    const sf = new Snowflake(PRESETS.snowflake.epochMs);
    let last = -1n;
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < N; i++) {
      const id = sf.generate({ workerId: 5n });
      if (id <= last) sapphireViolations++;
      last = id;
    }
    return Number(process.hrtime.bigint() - t0) / 1e9;
  },
  async 'idmint single'() {
    const g = new SnowflakeGenerator(PRESETS.snowflake, leases, systemClock, 10);
    const last = { v: -1n };
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < N; i++) check(await g.take(1), last);
    return Number(process.hrtime.bigint() - t0) / 1e9;
  },
  async 'idmint batch'() {
    const g = new SnowflakeGenerator(PRESETS.snowflake, leases, systemClock, 10);
    const last = { v: -1n };
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < N; i += 1000) check(await g.take(1000), last);
    return Number(process.hrtime.bigint() - t0) / 1e9;
  },
};

async function main(): Promise<void> {
  const recorder = startRun('snowflake');
  const rates: Record<string, number[]> = {};
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, fn] of Object.entries(cases)) {
      const s = await fn();
      (rates[name] ??= []).push(N / s);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const base = median(rates.sapphire);
  const table = [
    ['case', 'IDs/s (median)', '÷ sapphire'],
    ...Object.entries(rates).map(([name, xs]) => [
      name,
      Math.round(median(xs)).toLocaleString('en-US'),
      (median(xs) / base).toFixed(2),
    ]),
  ];
  const lines = [markdownTable(table)];
  const verdict = `- idmint batch ≥ sapphire: ${median(rates['idmint batch']) >= base ? 'PASS' : 'MISS'}; idmint single ≥ sapphire: ${median(rates['idmint single']) >= base ? 'PASS' : 'MISS'}`;
  const md = [
    '# Snowflake generation in process (latest run)',
    '',
    `- date: ${new Date().toISOString()}; node ${process.version}; ${cpus().length} CPUs`,
    `- ${N.toLocaleString('en-US')} IDs per case per round, ${ROUNDS} rounds interleaved, medians; every ID checked to increase`,
    `- command: npm run bench:snowflake${args.length ? ` -- ${args.join(' ')}` : ''}`,
    '',
    ...lines,
    '',
    verdict,
    `- IDs not above the previous one: idmint 0 (checked); sapphire ${sapphireViolations.toLocaleString('en-US')} of ${(N * ROUNDS).toLocaleString('en-US')} (its sequence wraps within a millisecond instead of waiting for the next one)`,
    '',
  ].join('\n');
  console.log(md);
  if (opts.write) {
    mkdirSync(RESULTS, { recursive: true });
    writeFileSync(`${RESULTS}snowflake-latest.md`, md);
    recorder.finish({ rows: table, ratio: { column: '÷ sapphire', baseline: 'sapphire' }, notes: [verdict.slice(2)] });
  }
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
