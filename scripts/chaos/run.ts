// `npm run chaos -- [--duration 120] [--servers 3] [--clients 3] [--seed N] [--out DIR] [--topology single|sentinel]`:
// runs the chaos campaign (scripts/chaos/campaign.ts) and prints its one summary line on
// stdout. Exit code 0 when the checker found no duplicate, no order violation and no failure
// without an error code, and every process served again in time after a connection of its was
// ended from inside; 1 when not; 2 for bad flags; 3 when the hard deadline struck.
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCampaign } from './campaign.js';
import type { Topology } from './faults.js';

const USAGE = `usage: npm run chaos -- [--duration S] [--servers M] [--clients K] [--seed N] [--out DIR] [--pause MS] [--fault-every S] [--topology T]
  --duration     seconds of load with faults (default 120)
  --servers      idmint processes (default 3)
  --clients      client processes, each with HTTP, websocket and UDP loops (default 3)
  --seed         seed of the fault schedule and the request mix (default: random, printed)
  --out          directory for records, logs and the report (default .data/chaos/runs/<run id>)
  --pause        ms each client loop pauses after an answer (default 5; higher is lighter)
  --fault-every  seconds between faults (default 7, or 3.5 for runs under a minute)
  --topology     the default Redis: single (one server behind a fault proxy, the default) or
                 sentinel (a master, a replica and three sentinels; adds the redis-failover and
                 redis-end faults)`;

function parse(argv: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  const known = new Set(['duration', 'servers', 'clients', 'seed', 'out', 'pause', 'fault-every', 'topology']);
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(argv[i]);
    if (!m || !known.has(m[1])) throw new Error(`unknown argument ${argv[i]}`);
    const v = m[2] ?? argv[++i];
    if (v === undefined) throw new Error(`--${m[1]} needs a value`);
    out[m[1]] = v;
  }
  return out;
}

function num(flags: Record<string, string>, name: string, def: number, min: number, max: number): number {
  const raw = flags[name];
  if (raw === undefined) return def;
  const v = Number(raw);
  if (!Number.isFinite(v) || v < min || v > max)
    throw new Error(`--${name} must be a number from ${min} to ${max}, got "${raw}"`);
  return v;
}

function topology(raw: string | undefined): Topology {
  if (raw === undefined || raw === 'single' || raw === 'sentinel') return raw ?? 'single';
  throw new Error(`--topology must be single or sentinel, got "${raw}"`);
}

async function main(): Promise<void> {
  let flags: Record<string, string>;
  let opts;
  try {
    flags = parse(process.argv.slice(2));
    opts = {
      durationS: num(flags, 'duration', 120, 5, 3600),
      servers: Math.round(num(flags, 'servers', 3, 1, 16)),
      clients: Math.round(num(flags, 'clients', 3, 1, 32)),
      seed: Math.round(num(flags, 'seed', Math.floor(Math.random() * 1e9), 0, 2 ** 31)),
      pauseMs: num(flags, 'pause', 5, 0, 10000),
      faultEveryS: flags['fault-every'] === undefined ? undefined : num(flags, 'fault-every', 7, 0.5, 3600),
      outDir: flags.out === undefined ? undefined : resolve(flags.out),
      topology: topology(flags.topology),
    };
  } catch (err) {
    console.error(`${(err as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  const root = fileURLToPath(new URL('../../', import.meta.url));
  console.error(
    `[chaos] ${opts.durationS} s, ${opts.servers} idmint processes, ${opts.clients} clients, seed ${opts.seed}, topology ${opts.topology}`,
  );
  const result = await runCampaign({ ...opts, root });
  for (const e of result.report.examples) console.error(`[chaos] ${e}`);
  console.error(`[chaos] records, logs and report.json in ${result.outDir}`);
  console.log(result.summary);
  process.exit(result.exitCode);
}

main().catch((err: Error) => {
  console.error(`[chaos] failed: ${err.stack ?? err.message}`);
  process.exit(1);
});
