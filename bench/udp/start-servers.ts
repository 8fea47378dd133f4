// The servers `npm run bench:udp` measures, each a child process: the baseline servers
// (bench/udp/servers.ts, one per role) and idmint against the run's own redis-server and the real
// MySQL with the database and key prefix of names. With --pin each is moved to CPU 1, the
// clients' CPU being 0, and the redis-server to the CPU --redis-cpu names (1 by default).
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTsx, type Child } from '../../tools/child.js';
import { pinProcess } from '../../tools/cpu.js';
import { testEnv, type TestNames } from '../../tools/env.js';
import { BENCH_SETTINGS } from '../server.js';
import type { UdpOptions } from './options.js';

export interface Baseline {
  readonly proc: ChildProcess;
  /** The server's UDP port, once it listens. */
  readonly ready: Promise<{ port: number }>;
}

/** A baseline server of the given role (bench/udp/servers.ts). */
export function startBaseline(opts: UdpOptions, role: string, extra: string[] = []): Baseline {
  // --cpu-prof: each baseline server writes its profiles in a folder named by its role.
  const prof = opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${join(opts.cpuProf, role)}`] : [];
  const proc = fork(fileURLToPath(new URL('./servers.ts', import.meta.url)), [role, ...extra], {
    execArgv: ['--import', 'tsx', ...prof],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return { proc, ready: new Promise((resolve) => proc.once('message', (m) => resolve(m as { port: number }))) };
}

/** --pin: a server (every thread of it) on CPU 1; the clients stay on CPU 0 with this process. */
export function pinServer(opts: UdpOptions, pid: number | undefined): void {
  if (opts.pin && pid !== undefined) pinProcess(pid, 1);
}

/**
 * --redis-cpu: the run's redis-server (every thread of it) on that CPU. Left to the scheduler on
 * two cores, one holding the clients and the other the servers, it moved between them from one
 * second to the next: a Redis case's figures then depended on where it ran in that case's
 * seconds, since on the servers' CPU it takes the time the server waits for. Pinned, every case
 * that calls Redis has it in the same place.
 */
export function placeRedis(opts: UdpOptions, pid: number | undefined): void {
  if (opts.redisCpu === 'any') return;
  if (pid === undefined || !pinProcess(pid, opts.redisCpu))
    throw new Error(`the run's redis-server could not be pinned to CPU ${opts.redisCpu}`);
}

/** idmint serving UDP on udpPort against the Redis at redisUrl, ready once its HTTP health check answers. */
export async function startIdmint(
  opts: UdpOptions,
  names: TestNames,
  redisUrl: string,
  udpPort: number,
  httpPort: number,
): Promise<Child> {
  const env = {
    ...process.env,
    ...testEnv(names, {
      REDIS_URL: redisUrl,
      PORT: String(httpPort),
      UDP_PORT: String(udpPort),
      LOG_LEVEL: 'warn',
      ...BENCH_SETTINGS,
    }),
  };
  const nodeFlags = opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProf}`] : [];
  const idmint = startTsx(['src/cli.ts', 'serve'], { name: 'idmint', env, nodeFlags, inherit: true });
  await idmint.waitUntil(async () => (await fetch(`http://127.0.0.1:${httpPort}/healthz`)).ok, 30000, 200);
  pinServer(opts, idmint.pid);
  return idmint;
}
