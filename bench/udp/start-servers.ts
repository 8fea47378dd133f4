// The servers `npm run bench:udp` measures, each a child process: the baseline servers
// (bench/udp/servers.ts, one per role) and idmint against the real Redis and MySQL with the
// database and key prefix of names. With --pin each is moved to CPU 1, the clients' CPU being 0.
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

/** idmint serving UDP on udpPort, ready once its HTTP health check answers. */
export async function startIdmint(
  opts: UdpOptions,
  names: TestNames,
  udpPort: number,
  httpPort: number,
): Promise<Child> {
  const env = {
    ...process.env,
    ...testEnv(names, { PORT: String(httpPort), UDP_PORT: String(udpPort), LOG_LEVEL: 'warn', ...BENCH_SETTINGS }),
  };
  const nodeFlags = opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProf}`] : [];
  const idmint = startTsx(['src/cli.ts', 'serve'], { name: 'idmint', env, nodeFlags, inherit: true });
  await idmint.waitUntil(async () => (await fetch(`http://127.0.0.1:${httpPort}/healthz`)).ok, 30000, 200);
  pinServer(opts, idmint.pid);
  return idmint;
}
