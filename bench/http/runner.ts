// The HTTP benchmark's runs: the tags of the idmint cases, and one measured case against a server
// (bench/server.ts): a warm-up, a timed load with every answer checked, and the CPU and Redis
// figures of the window.
import type { Redis } from 'ioredis';
import { machineBusySeconds, procCpuSeconds, selfCpuSeconds } from '../../tools/cpu.js';
import { countRepeats } from '../../tools/duplicates.js';
import { adminHeaders, createTag } from '../../tools/node.js';
import { redisCounters } from '../../tools/redis-stats.js';
import { fmt } from '../../tools/table.js';
import { maxOf, runLoad, type Check, type LoadResult } from '../load.js';
import type { Server } from '../server.js';
import { ID_CASES, type CaseName, type Options } from './cases.js';

/** GET /v1/ids/:tag?count=n (plus the case's query): the IDs as sent, decimal or rule strings. */
async function fetchBatch(url: string, tag: string, count: number, query = ''): Promise<string[]> {
  const path = `/v1/ids/${tag}?count=${count}${query.replace('?', '&')}`;
  const res = await fetch(url + path);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${text}`);
  return (JSON.parse(text) as { ids: string[] }).ids;
}

/** Creates the tags of the idmint cases and takes a first ID of each (its first segment or lease). */
export async function createTags(idmint: Server): Promise<void> {
  for (const c of Object.values(ID_CASES)) {
    await createTag(idmint.url, { tag: c.tag, ...c.create });
    // Cold start: the first take of each tag waits for its first segment or lease.
    await fetchBatch(idmint.url, c.tag, 1, c.query);
  }
}

export interface CaseResult extends Omit<LoadResult, 'ids' | 'strings' | 'examples'> {
  name: CaseName;
  /** 1-based round; 0 for the median row of several rounds. */
  round: number;
  path: string;
  ratioRps?: number;
  ratioP99?: number;
  examples: string[];
  checks: string[];
  cpu: { server: number; client: number; redis: number; other: number };
  redisEvalCalls: number;
  requestsPerEval?: number;
  redisEvalUsecPerCall?: number;
}

export interface RunContext {
  readonly opts: Options;
  readonly bare?: Server;
  readonly idmint?: Server;
  readonly redis: Redis;
  /** Broken checks and failed requests, each failing the run. */
  readonly problems: string[];
}

function increasing(xs: bigint[]): boolean {
  for (let i = 1; i < xs.length; i++) if (!(xs[i] > xs[i - 1])) return false;
  return true;
}

/** One case of one round. */
export async function measureCase(ctx: RunContext, name: CaseName, round: number): Promise<CaseResult> {
  const { opts, problems } = ctx;
  const server = name === 'baseline' ? ctx.bare! : ctx.idmint!;
  const idCase = name === 'baseline' ? undefined : ID_CASES[name];
  const path = idCase ? `/v1/id/${idCase.tag}${idCase.query}` : '/v1/id/bench';
  const label = opts.rounds > 1 ? `${name} (round ${round})` : name;
  const checks: string[] = [];
  const numeric = idCase !== undefined && idCase.pattern === undefined;
  const batch = async (tag: string, query: string) => (await fetchBatch(server.url, tag, 10, query)).map(BigInt);
  let before: bigint[] = [];
  if (idCase && numeric) {
    before = await batch(idCase.tag, idCase.query);
    if (!increasing(before)) problems.push(`${label}: batch before the run is not increasing: ${before.join(',')}`);
  }
  const check: Check = !idCase
    ? { kind: 'constant', body: '{"id":"1"}' }
    : idCase.pattern
      ? { kind: 'strings', pattern: idCase.pattern }
      : { kind: 'ids', above: before[before.length - 1] ?? 0n };

  if (opts.warmup > 0) {
    process.stdout.write(`${label}: warm-up ${opts.warmup} s... `);
    const w = await runLoad(server.url + path, opts.connections, opts.warmup, check);
    if (w.non2xx + w.errors + w.timeouts + w.violations > 0) {
      problems.push(
        `${label} warm-up: ${w.non2xx} non-2xx, ${w.errors} errors, ${w.timeouts} timeouts, ${w.violations} broken checks ${w.examples.join(' | ')}`,
      );
    }
    if (check.kind === 'ids') check.above = maxOf(w.ids, check.above);
  } else process.stdout.write(`${label}: `);
  process.stdout.write(`measuring ${opts.duration} s... `);
  const r0 = await redisCounters(ctx.redis);
  const s0 = procCpuSeconds(server.pid);
  const c0 = selfCpuSeconds();
  const m0 = machineBusySeconds();
  const t0 = process.hrtime.bigint();
  const r = await runLoad(server.url + path, opts.connections, opts.duration, check);
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const m1 = machineBusySeconds();
  const s1 = procCpuSeconds(server.pid);
  const c1 = selfCpuSeconds();
  const r1 = await redisCounters(ctx.redis);

  if (idCase && numeric) {
    const after = await batch(idCase.tag, idCase.query);
    if (!increasing(after)) problems.push(`${label}: batch after the run is not increasing: ${after.join(',')}`);
    const lo = before[before.length - 1];
    const hi = after[0];
    if (!(hi > lo)) problems.push(`${label}: batch after the run (${hi}) is not above the batch before it (${lo})`);
    checks.push(`batches before/after increase (${lo} < ${hi})`);
    const top = maxOf(r.ids, lo);
    const dup = countRepeats(r.ids);
    if (dup > 0) problems.push(`${label}: ${dup} duplicate IDs`);
    if (r.ids.length && !(top < hi))
      problems.push(`${label}: an ID of the run (${top}) is not below the batch fetched after it (${hi})`);
    if (r.ids.length !== r.ok) problems.push(`${label}: ${r.ok} 2xx answers but ${r.ids.length} IDs checked`);
    checks.push(`${fmt(r.ids.length)} IDs distinct, increasing per connection, within (${lo}, ${hi})`);
  } else if (idCase) {
    const dup = countRepeats(r.strings);
    if (dup > 0) problems.push(`${label}: ${dup} duplicate IDs`);
    if (r.strings.length !== r.ok) problems.push(`${label}: ${r.ok} 2xx answers but ${r.strings.length} IDs checked`);
    checks.push(`${fmt(r.strings.length)} IDs distinct, matching ${idCase.pattern}`);
  } else {
    checks.push(`${fmt(r.ok)} bodies equal {"id":"1"}`);
  }
  if (r.non2xx + r.errors + r.timeouts > 0) {
    problems.push(
      `${label}: ${r.non2xx} non-2xx (${JSON.stringify(r.statusCodes)}), ${r.errors} errors, ${r.timeouts} timeouts ${r.examples.join(' | ')}`,
    );
  }
  if (r.violations > 0) problems.push(`${label}: ${r.violations} broken answer checks: ${r.examples.join(' | ')}`);

  const evals = r1.evalCalls - r0.evalCalls;
  const cpu = {
    server: ((s1 - s0) / wall) * 100,
    client: ((c1 - c0) / wall) * 100,
    redis: ((r1.cpuSeconds - r0.cpuSeconds) / wall) * 100,
    other: 0,
  };
  cpu.other = Math.max(0, ((m1 - m0) / wall) * 100 - cpu.server - cpu.client - cpu.redis);
  const { ids: _ids, strings: _strings, ...rest } = r;
  console.log(
    `${fmt(r.rps)} req/s, p99 ${fmt(r.p99, 3)} ms${cpu.other > 15 ? ` (other processes used ${fmt(cpu.other)}% of a core)` : ''}`,
  );
  return {
    ...rest,
    name,
    round,
    path,
    checks,
    cpu,
    redisEvalCalls: evals,
    requestsPerEval: name === 'baseline' || evals === 0 ? undefined : r.ok / evals,
    redisEvalUsecPerCall: evals === 0 ? undefined : (r1.evalUsec - r0.evalUsec) / evals,
  };
}

/** What idmint said and how its tags grew during the run (notes, not failures). */
export async function idmintNotes(idmint: Server): Promise<string[]> {
  const notes: string[] = [];
  const warn = idmint.output.filter(
    (l) => l.includes('"level":40') || l.includes('"level":50') || l.includes('"level":60'),
  );
  if (warn.length) notes.push(`idmint logged ${warn.length} warnings/errors; last: ${warn.slice(-3).join(' / ')}`);
  for (const t of Object.values(ID_CASES).map((c) => c.tag)) {
    const res = await fetch(`${idmint.url}/v1/admin/tags/${t}`, { headers: adminHeaders }).catch(() => undefined);
    const shown = (res?.status === 200 ? await res.json().catch(() => undefined) : undefined) as
      | { state?: { shards?: { step?: number; segments_used?: number }[] } }
      | undefined;
    const sh = shown?.state?.shards?.[0];
    if (sh) notes.push(`tag ${t} after the run: ${sh.segments_used} segments used, step now ${sh.step}`);
  }
  return notes;
}
