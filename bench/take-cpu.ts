// Redis CPU per `take`, run by `npm run bench:take`: a private redis-server on a free loopback
// port (its commandstats see only this run's calls, so CONFIG RESETSTAT is safe there), one
// segment hash in the steady state (bench/take-segment.ts: a cold take through the segment
// store, then one install of a segment too large to end during the run), then in interleaved
// rounds each case runs alone in its own window: RESETSTAT, CALLS calls (one ID each, a few in
// flight), INFO commandstats. The figure is the server's usec / calls of the case's command
// (EVALSHA, or INCR), median over the rounds, and its ratio to the no-op script.
//   no-op EVALSHA   `return 1` with the take's keys and arguments
//   INCR            one INCR of a plain key: the cheapest write
//   take            SegmentStore.take(ref, 1): the call every order:global request makes
//   take - X        scratch copies of take-2.lua with one part removed (a breakdown; these hand
//                   out IDs from the same hash, so they are real steady-state calls; "the
//                   identity read" has the server's identity as a constant, which is not safe,
//                   see docs/GUARANTEES.md, and shows what the read costs)
//   only X          scripts doing just one part of the take
//   take, FILE      --also FILE: another take script (e.g. an earlier version, from git show)
//                   on the same hash with the same keys and arguments
// Flags: --rounds N (default 7)  --calls N (per window, default 20000)  --also FILE  --no-write
// Results: bench/results/take-cpu-latest.md
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { Keys } from '../src/store/redis/keys.js';
import { scriptText } from '../src/store/redis/lua.js';
import { RedisServer } from '../tools/redis-server.js';
import { commandStat, redisIdentity } from '../tools/redis-stats.js';
import { markdownTable } from '../tools/table.js';
import { startRun } from './record.js';
import { readBenchOptions } from './common-options.js';
import { IDENTITY_READ, TAKE_FLOOR_LUA } from './take-floor.js';
import { steadySegment, takeTokens } from './take-segment.js';
import { median } from './stats.js';

const args = process.argv.slice(2);
const opts = { rounds: 7, calls: 20000, write: true, also: [] as string[] };
readBenchOptions(
  args,
  'npm run bench:take -- [--rounds N] [--calls N] [--also FILE.lua] [--no-write]',
  { rounds: [1], write: true },
  opts,
  (a) => {
    switch (a.flag) {
      case '--calls':
        opts.calls = a.whole(100);
        break;
      case '--also':
        opts.also.push(a.text());
        break;
      default:
        return false;
    }
    return true;
  },
);

const IN_FLIGHT = 8;
const TAKE_LUA = scriptText('take-2');
const sha1 = (s: string) => createHash('sha1').update(s).digest('hex');
const FLOOR = 'only the identity read and one HINCRBY (the floor)';

const READING = `Reading the table:

- \`take\` is what an \`order: global\` request costs Redis (take-2.lua as it runs everywhere:
  single server and cluster), steady state: the identity read (INFO replication), one GET of
  the moved marker, one HMGET of \`fe:<identity>\`, the cursor and the call's answer field,
  one HSET of the cursor and the call's answer, an integer reply.
- \`take - the identity read (a constant)\` has the server's identity written in as a constant:
  not safe (a master demoted and promoted again would not notice, docs/GUARANTEES.md), shown
  only to split the cost. The other \`take - X\` rows cut one part out of the take: the GET of
  the moved marker, the write, the integer reply; without the steady-state branch every call
  runs the general path (reading 13 fields, writing 4).
- \`only the identity read and one HINCRBY (the floor)\` is the least a take that checks the
  server it runs on can do: learn the server's identity and move a cursor. No take that keeps
  the promises costs less; the GET of the moved marker and the HGET of the fast end are what
  the take adds to it (docs/GUARANTEES.md, "What a take costs", says why both stay).
- \`only a run id read (INFO server)\` is what earlier versions read per call.
- Absolute figures depend on the machine and vary between runs; the ratios to the no-op
  script measured in the same run are what compare. The private server isolates this run's
  calls (on a shared Redis, commandstats mix everyone's EVALSHA).`;

interface Case {
  readonly name: string;
  /** The commandstats entry the case is measured by. */
  readonly stat: 'evalsha' | 'incr';
  readonly call: () => Promise<unknown>;
}

async function runWindow(r: Redis, c: Case, calls: number): Promise<number> {
  await r.config('RESETSTAT');
  let left = calls;
  const lane = async () => {
    while (left-- > 0) await c.call();
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  const s = await commandStat(r, c.stat);
  if (s.calls < calls) throw new Error(`${c.name}: commandstats saw ${s.calls} calls of ${calls}`);
  return s.usec / s.calls;
}

async function main(): Promise<void> {
  const recorder = startRun('take-cpu');
  const server = await RedisServer.start();
  const version = execFileSync('redis-server', ['--version']).toString().trim();
  const r = new Redis(server.url, { maxRetriesPerRequest: 1 });
  try {
    const keys = new Keys('bench');
    const { store, ref, seg, moved } = await steadySegment(r, keys, 'take-cpu', 0.9);
    const identity = await redisIdentity(r);
    const token = takeTokens('bench');
    const takeArgs = (): (string | number)[] => [1, token(), 0.9, ref.epoch];
    const script = (name: string, lua: string): Case => {
      const sha = sha1(lua);
      return { name, stat: 'evalsha', call: () => r.evalsha(sha, 2, seg, moved, ...takeArgs()) };
    };
    const scripts: { name: string; lua: string }[] = [{ name: 'no-op EVALSHA', lua: 'return 1' }];
    // Scratch copies of the take without one part; skipped when the part is not in the script.
    const without = (name: string, part: string | RegExp, replacement: string) => {
      const lua = TAKE_LUA.replace(part, replacement);
      if (lua !== TAKE_LUA) scripts.push({ name: `take - ${name}`, lua });
      else console.log(`(skipped "take - ${name}": the script has no ${String(part)})`);
    };
    without('the identity read (a constant)', 'local rid = serverIdentity()', `local rid = '${identity}'`);
    without('GET moved', "redis.call('GET', KEYS[2])", 'false');
    without(
      'the write (cursor and answer)',
      "redis.call('HSET', key, 'cur', int(first + n), answerField, call .. '=' .. int(first))",
      '',
    );
    without('the fast path (the general path only)', 'if fastEnd then', 'if false then');
    without('the reply (returns 1)', /return first\n(\s*)end/, 'return 1\n$1end');
    for (const file of opts.also) scripts.push({ name: `take, ${file}`, lua: readFileSync(file, 'utf8') });
    scripts.push({ name: 'only the identity read (INFO replication)', lua: `${IDENTITY_READ}return 1` });
    scripts.push({ name: FLOOR, lua: TAKE_FLOOR_LUA });
    scripts.push({
      name: 'only a run id read (INFO server)',
      lua: "local rid = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')\nreturn 1",
    });
    scripts.push({
      name: 'only HMGET of 12 fields',
      lua: "local h = redis.call('HMGET', KEYS[1], 'gen', 'cur', 'end', 'nf', 'ne', 'seg', 'pf', 'rq', 'ex', 'lim', 'hwm', 'rid')\nreturn 1",
    });
    scripts.push({ name: 'only HGET of one field', lua: "local v = redis.call('HGET', KEYS[1], 'cur')\nreturn 1" });
    scripts.push({ name: 'only HINCRBY of one field', lua: "redis.call('HINCRBY', KEYS[1], 'bench', 1)\nreturn 1" });
    for (const s of scripts) await r.script('LOAD', s.lua);

    const cases: Case[] = [
      script(scripts[0].name, scripts[0].lua),
      { name: 'INCR', stat: 'incr', call: () => r.incr('bench:incr') },
      {
        name: 'take',
        stat: 'evalsha',
        call: () =>
          store.take(ref, 1, 0.9).then((t) => {
            if (t.status !== 'ok') throw new Error(`take answered ${t.status}`);
          }),
      },
      ...scripts.slice(1).map((s) => script(s.name, s.lua)),
    ];
    // One warm-up window per case, not counted.
    for (const c of cases) await runWindow(r, c, Math.min(2000, opts.calls));
    const per = new Map<string, number[]>(cases.map((c) => [c.name, []]));
    for (let round = 0; round < opts.rounds; round++) {
      // Interleaved: each round runs every case once, starting from a different one.
      for (let i = 0; i < cases.length; i++) {
        const c = cases[(i + round) % cases.length];
        per.get(c.name)!.push(await runWindow(r, c, opts.calls));
      }
      process.stdout.write(`round ${round + 1}/${opts.rounds}\n`);
    }
    const med = new Map([...per].map(([k, v]) => [k, median(v)!]));
    const base = med.get('no-op EVALSHA')!;
    const take = med.get('take')!;
    const floor = med.get(FLOOR)!;
    const rows = cases.map((c) => {
      const xs = per.get(c.name)!;
      return [
        c.name,
        med.get(c.name)!.toFixed(2),
        `${Math.min(...xs).toFixed(2)} to ${Math.max(...xs).toFixed(2)}`,
        (med.get(c.name)! / base).toFixed(2),
      ];
    });
    const goal = 3.5;
    const table = [['case', 'µs per call (median)', 'range over rounds', '÷ no-op'], ...rows];
    const verdicts = [
      `take ≤ ${goal}x the no-op script: ${take / base <= goal ? 'MET' : 'MISS'} (${(take / base).toFixed(2)}x)`,
      `the floor of a safe take (the identity read and one cursor move) ≤ ${goal}x: ${floor / base <= goal ? 'yes' : 'no'} (${(floor / base).toFixed(2)}x); the take costs ${(take / floor).toFixed(2)}x its floor`,
    ];
    const md = [
      '# Redis CPU per take (latest run)',
      '',
      `- date: ${new Date().toISOString()}; ${version.split(' ').slice(0, 3).join(' ')}; node ${process.version}; ${cpus().length} CPUs`,
      `- a private redis-server (nothing else on it); ${opts.calls.toLocaleString('en')} calls per case and window, ${IN_FLIGHT} in flight, one ID per take; ${opts.rounds} rounds interleaved, medians`,
      "- figure: usec / calls of the case's command in INFO commandstats (EVALSHA, or INCR), after CONFIG RESETSTAT on the private server",
      `- command: npm run bench:take${args.length ? ` -- ${args.join(' ')}` : ''}`,
      '',
      markdownTable(table),
      '',
      ...verdicts.map((v) => `- ${v}`),
      '',
      READING,
      '',
    ].join('\n');
    console.log(md);
    if (opts.write) {
      const dir = fileURLToPath(new URL('./results/', import.meta.url));
      mkdirSync(dir, { recursive: true });
      writeFileSync(`${dir}take-cpu-latest.md`, md);
      recorder.finish({ rows: table, ratio: { column: '÷ no-op', baseline: 'no-op EVALSHA' }, notes: verdicts });
    }
  } finally {
    r.disconnect();
    await server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
