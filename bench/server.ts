// A server under test as a child process on a port of its own (`node [flags] --import tsx
// <script...>` with PORT and HOST set): the bare route or idmint, for bench:http and bench:scale.
import { freePort, startTsx, type Child } from '../tools/child.js';
import { pinProcess, processTree, readProcs } from '../tools/cpu.js';
import { ADMIN_TOKEN, REDIS_URL, type TestNames } from '../tools/env.js';

export interface Server extends Child {
  readonly url: string;
}

export interface ServerOptions {
  /** Added to this process's environment. */
  readonly env?: Record<string, string>;
  readonly nodeFlags?: readonly string[];
  /** Run from this directory (another checkout's idmint); this one's by default. */
  readonly cwd?: string;
  /** Ready once a line of its output passes this; without it, once its port answers HTTP. */
  readonly ready?: (line: string) => boolean;
  /** Started on this CPU only (`taskset -c`): it and every thread and child it makes. */
  readonly cpu?: number;
  /** Once ready, every thread of every process of it moved to this CPU (a server that forks). */
  readonly pinTree?: number;
  /** How long it may take to be ready, and how long it is given to stop when it is not. */
  readonly timeoutMs?: number;
  readonly stopMs?: number;
}

/** Spawns the server and resolves once it is ready; stops it when it does not get ready. */
export async function startServer(name: string, script: readonly string[], opts: ServerOptions = {}): Promise<Server> {
  const { timeoutMs = 30_000, stopMs = 10_000 } = opts;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = startTsx(script, {
    name,
    cwd: opts.cwd,
    nodeFlags: opts.nodeFlags,
    cpu: opts.cpu,
    env: { ...process.env, ...opts.env, PORT: String(port), HOST: '127.0.0.1' },
  });
  try {
    if (opts.ready) await child.waitForLine(opts.ready, timeoutMs);
    else
      await child.waitUntil(async () => {
        await fetch(`${url}/`, { signal: AbortSignal.timeout(1000) });
        return true;
      }, timeoutMs);
  } catch (err) {
    await child.stop(stopMs);
    throw err;
  }
  if (opts.pinTree !== undefined) for (const pid of processTree(readProcs(), child.pid)) pinProcess(pid, opts.pinTree);
  return Object.assign(child, { url });
}

/**
 * Settings every benchmarked idmint runs with: one source address (the load generator's) sends
 * every request, so the per-source limit on IDs of open finite tags (rule and permuted tags) is
 * off; the limit on refusals stays on, as it does not meet a run that is refused nothing.
 */
export const BENCH_SETTINGS: Readonly<Record<string, string>> = { SOURCE_MAX_FINITE_IDS_PER_SECOND: '0' };

/**
 * The environment of an idmint under a benchmark: the test stores of `names`, no UDP or gRPC listener, warnings only.
 */
export function idmintEnv(
  names: TestNames,
  nodeId: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    REDIS_URL,
    MYSQL_URL: names.mysqlUrl,
    REDIS_PREFIX: names.prefix,
    ADMIN_TOKEN,
    LOG_LEVEL: 'warn',
    UDP_PORT: '0',
    GRPC_PORT: '0',
    NODE_ID: nodeId,
    ...BENCH_SETTINGS,
    ...extra,
  };
}

/**
 * SIGINT and SIGTERM noted instead of ending the process, so a benchmark stops after its current step and cleans up.
 */
export interface Interrupt {
  /** A signal came. */
  readonly interrupted: boolean;
  /** Hands the signals back to their default. */
  stop(): void;
}

/** Notes SIGINT and SIGTERM from now on, printing `message` when one comes. */
export function catchInterrupt(message: string): Interrupt {
  let interrupted = false;
  const onSignal = () => {
    interrupted = true;
    console.error(message);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    get interrupted() {
      return interrupted;
    },
    stop() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/** Runs a benchmark's main and exits with its code (1, with the stack, when it throws). */
export function runMain(main: () => Promise<number>): void {
  main().then(
    (code) => process.exit(code),
    (err: Error) => {
      console.error(`bench failed: ${err.stack ?? err.message}`);
      process.exit(1);
    },
  );
}
