// Counters of a Redis server for benchmarks: calls and usec per command (INFO commandstats) and
// the server's CPU time (INFO cpu). They are server-wide: every client of the server counts.
// Sample before and after a window and subtract.

/** What is read: any client with INFO (a Redis of ioredis). */
export interface InfoSource {
  info(section: string): Promise<string>;
}

export interface CommandStat {
  readonly calls: number;
  readonly usec: number;
}

export interface RedisCounters {
  /** Script calls of every kind (EVAL, EVALSHA and their _RO forms). */
  readonly evalCalls: number;
  readonly evalUsec: number;
  readonly evalsha: CommandStat;
  /** EVAL alone (the benchmarks' paced no-op script runs as EVAL, so it is counted apart from EVALSHA). */
  readonly eval: CommandStat;
  /** INCR and INCRBY calls (the baselines' counters). */
  readonly counterCalls: number;
  /** used_cpu_user + used_cpu_sys of the server. */
  readonly cpuSeconds: number;
}

const NONE: CommandStat = { calls: 0, usec: 0 };

/** INFO commandstats as a map from command name (lower case, e.g. "evalsha") to its counters. */
export async function commandStats(r: InfoSource): Promise<Map<string, CommandStat>> {
  const out = new Map<string, CommandStat>();
  for (const m of (await r.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    out.set(m[1], { calls: Number(m[2]), usec: Number(m[3]) });
  }
  return out;
}

/** The counters of one command (zero when it was never called). */
export async function commandStat(r: InfoSource, command: string): Promise<CommandStat> {
  return (await commandStats(r)).get(command) ?? NONE;
}

export async function redisCounters(r: InfoSource): Promise<RedisCounters> {
  const stats = await commandStats(r);
  const cpu = await r.info('cpu');
  let evalCalls = 0;
  let evalUsec = 0;
  for (const name of ['evalsha', 'eval', 'evalsha_ro', 'eval_ro']) {
    const s = stats.get(name) ?? NONE;
    evalCalls += s.calls;
    evalUsec += s.usec;
  }
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? NaN);
  const counterCalls = (stats.get('incr') ?? NONE).calls + (stats.get('incrby') ?? NONE).calls;
  return {
    evalCalls,
    evalUsec,
    evalsha: stats.get('evalsha') ?? NONE,
    eval: stats.get('eval') ?? NONE,
    counterCalls,
    cpuSeconds: field('used_cpu_user') + field('used_cpu_sys'),
  };
}

/** Redis usec per call of one command between two readings of its counters. */
const usecPerCall = (a: CommandStat, b: CommandStat): number => (b.usec - a.usec) / (b.calls - a.calls);

/** Redis usec per EVALSHA between two readings. */
export const usecPerEvalsha = (a: RedisCounters, b: RedisCounters): number => usecPerCall(a.evalsha, b.evalsha);

/**
 * Redis CPU and script time per request between two readings (µs). The script time only
 * where the case runs about one script per request (not the few of idmint's queue and lease
 * work, nor the takes of order node's blocks).
 */
export function redisPerRequest(
  a: RedisCounters,
  b: RedisCounters,
  requests: number,
): { redisUs: number; scriptUs: number } {
  const calls = b.evalsha.calls - a.evalsha.calls;
  return {
    redisUs: ((b.cpuSeconds - a.cpuSeconds) * 1e6) / requests,
    scriptUs: calls >= requests / 2 ? usecPerEvalsha(a, b) : NaN,
  };
}

/** Redis usec per EVAL between two readings. */
export const usecPerEval = (a: RedisCounters, b: RedisCounters): number => usecPerCall(a.eval, b.eval);

/** The server's process id (INFO server), when it says. */
export async function redisPid(r: InfoSource): Promise<number | undefined> {
  const m = /^process_id:(\d+)/m.exec(await r.info('server'));
  return m ? Number(m[1]) : undefined;
}

/** The server's run id (INFO server): a new one after every restart. */
export async function redisRunId(r: InfoSource): Promise<string> {
  return /run_id:(\w+)/.exec(await r.info('server'))![1];
}

/**
 * The identity idmint's scripts record (src/store/redis/commands/includes/server-identity.lua):
 * the master's replication id (INFO replication).
 */
export async function redisIdentity(r: InfoSource): Promise<string> {
  return /master_replid:(\w+)/.exec(await r.info('replication'))![1];
}
