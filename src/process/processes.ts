// Several serving processes on one machine (`idmint serve --processes N`), with node's
// cluster module. The primary serves nothing itself: it forks N workers, each a full node
// with a NODE_ID, worker-id lease, lease queue and NODE_OFFSET of its own, sharing the HTTP,
// UDP and gRPC ports (the primary holds the listening sockets: grpc-js listens through
// node's net module, which hands cluster workers the primary's socket), Redis and MySQL. It replaces a
// worker that dies, with a capped backoff, gives up on one that keeps failing at start-up,
// and on SIGINT/SIGTERM asks every worker to shut down in order and exits once all have (on
// SIGTERM each first drains for SHUTDOWN_DRAIN_MS, see server.ts).
// Migrations need no step of their own here: each worker runs them under a MySQL named lock.
import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import type { Logger } from 'pino';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { createLogger } from '../logger.js';
import { drainsOn, startNode, type Node } from './serve.js';
import { flagsThisProcessLacks } from './node-flags.js';
import { serveClusterMetrics } from './cluster-metrics.js';

/** Most processes `--processes` accepts. */
export const MAX_PROCESSES = 256;
/** Replacement delays: RESTART_BASE_MS doubling per consecutive crash, up to RESTART_CAP_MS. */
export const RESTART_BASE_MS = 250;
export const RESTART_CAP_MS = 10_000;
/** A worker that served this long before dying starts a fresh backoff. */
export const STABLE_MS = 30_000;
/** After this many exits in a row before serving, a slot is not refilled again. */
export const MAX_START_FAILURES = 5;
/** Workers still running this long after the shutdown request (and SHUTDOWN_DRAIN_MS) are killed (SIGKILL). */
export const SHUTDOWN_TIMEOUT_MS = 30_000;

type Env = Record<string, string | undefined>;
type Message =
  | { idmint: 'ready'; url?: string; udpPort?: number; grpcPort?: number }
  | { idmint: 'shutdown'; drain?: boolean };

/**
 * Takes `--processes N` / `--processes=N` out of the flags. N is 1 to MAX_PROCESSES, or
 * `auto` for the number of CPUs this process may use; `error` says what is wrong with a bad
 * value (processes is then 1).
 */
export function takeProcessesFlag(flags: string[]): { processes: number; rest: string[]; error?: string } {
  const rest: string[] = [];
  let raw: string | undefined;
  for (let i = 0; i < flags.length; i++) {
    const flag = flags[i];
    if (flag === '--processes') raw = flags[++i] ?? '';
    else if (flag.startsWith('--processes=')) raw = flag.slice('--processes='.length);
    else rest.push(flag);
  }
  if (raw === undefined) return { processes: 1, rest };
  if (raw === 'auto') return { processes: Math.min(MAX_PROCESSES, availableParallelism()), rest };
  const count = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!(count >= 1 && count <= MAX_PROCESSES))
    return {
      processes: 1,
      rest,
      error: `--processes needs a number from 1 to ${MAX_PROCESSES} or "auto", got "${raw}"`,
    };
  return { processes: count, rest };
}

/** What a worker's environment adds to the primary's: its identity and the shared token. */
export function workerEnv(config: Config, index: number): Record<string, string> {
  return {
    NODE_ID: `${config.nodeId}-${index}`,
    NODE_OFFSET: String(config.nodeOffset + index),
    // A generated token must be the same in every worker: requests reach any of them.
    ADMIN_TOKEN: config.adminToken,
  };
}

export const isProcessWorker = (): boolean => cluster.isWorker;

// ---------------------------------------------------------------------------------------------
// Primary

interface Slot {
  readonly index: number;
  readonly nodeId: string;
  worker?: Worker;
  readyAt?: number;
  /** Consecutive deaths without STABLE_MS of service in between (drives the backoff). */
  crashes: number;
  /** Consecutive deaths before the worker was serving. */
  startFailures: number;
  givenUp: boolean;
  timer?: NodeJS.Timeout;
}

/** Runs the primary until its workers have all exited; resolves with the exit code. */
export async function runPrimary(config: Config, env: Env, processes: number): Promise<number> {
  // The last worker's settings are the ones that may fall out of range (NODE_ID length,
  // NODE_OFFSET): check them before forking anything.
  try {
    loadConfig({ ...env, ...workerEnv(config, processes - 1) });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(`with --processes ${processes}: ${err.message}`);
    return 2;
  }
  const log: Logger = createLogger(config).child({ role: 'primary' });
  if (config.adminTokenGenerated) {
    log.warn(
      { adminToken: config.adminToken },
      'ADMIN_TOKEN is not set; generated one for these processes (set ADMIN_TOKEN to choose it)',
    );
  }
  // The workers run with the serving flags (node-flags.ts) whether or not the primary was started with them.
  const missing = flagsThisProcessLacks();
  if (missing.length > 0) {
    cluster.setupPrimary({ execArgv: [...process.execArgv, ...missing] });
    log.info({ flags: missing }, 'serving processes get the node flags the primary was started without');
  }
  const slots: Slot[] = Array.from({ length: processes }, (_, index) => ({
    index,
    nodeId: `${config.nodeId}-${index}`,
    crashes: 0,
    startFailures: 0,
    givenUp: false,
  }));
  let stopping = false;
  let allReadyLogged = false;
  let killTimer: NodeJS.Timeout | undefined;
  let shutdownFailed = false;
  let finish!: (code: number) => void;
  const finished = new Promise<number>((resolve) => (finish = resolve));

  const live = () => slots.filter((s) => s.worker);

  const finishIfDone = () => {
    if (live().length > 0) return;
    clearTimeout(killTimer);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    finish(shutdownFailed ? 1 : 0);
  };

  const fork = (slot: Slot) => {
    slot.timer = undefined;
    const worker = cluster.fork(workerEnv(config, slot.index));
    slot.worker = worker;
    slot.readyAt = undefined;
    const pid = worker.process.pid;
    log.info({ index: slot.index, pid, nodeId: slot.nodeId }, 'serving process starting');
    // e.g. a message sent on a channel that just closed; the 'exit' that follows is what counts.
    worker.on('error', (err: Error) => log.warn({ index: slot.index, pid, err: err.message }, 'serving process error'));
    worker.on('message', (message: Message) => {
      if (message?.idmint !== 'ready') return;
      slot.readyAt = Date.now();
      slot.startFailures = 0;
      log.info(
        {
          index: slot.index,
          pid,
          nodeId: slot.nodeId,
          address: message.url,
          udpPort: message.udpPort,
          grpcPort: message.grpcPort,
        },
        'serving process ready',
      );
      if (!allReadyLogged && slots.every((s) => s.readyAt !== undefined)) {
        allReadyLogged = true;
        log.info(
          { processes, address: message.url, udpPort: message.udpPort, grpcPort: message.grpcPort },
          'all serving processes ready',
        );
      }
    });
    worker.on('exit', (code, signal) => {
      slot.worker = undefined;
      const served = slot.readyAt !== undefined;
      const info = { index: slot.index, pid, nodeId: slot.nodeId, code, signal };
      if (stopping) {
        const clean = code === 0 && !signal;
        if (!clean) shutdownFailed = true;
        if (clean) log.info(info, 'serving process finished');
        else log.error(info, 'serving process did not shut down cleanly');
        finishIfDone();
        return;
      }
      if (!served) slot.startFailures++;
      slot.crashes = served && Date.now() - slot.readyAt! >= STABLE_MS ? 1 : slot.crashes + 1;
      if (slot.startFailures >= MAX_START_FAILURES) {
        slot.givenUp = true;
        log.error(
          { ...info, startFailures: slot.startFailures },
          `serving process ${slot.index} failed ${slot.startFailures} times in a row before serving; not replacing it again`,
        );
        if (slots.every((s) => s.givenUp)) {
          log.error('no serving process is left; exiting');
          stopping = true;
          shutdownFailed = true;
          finishIfDone();
        }
        return;
      }
      const delayMs = Math.min(RESTART_CAP_MS, RESTART_BASE_MS * 2 ** (slot.crashes - 1));
      log.error({ ...info, served, restartInMs: delayMs }, 'serving process exited unexpectedly; replacing it');
      slot.timer = setTimeout(() => fork(slot), delayMs);
    });
  };

  const onSignal = (sig: NodeJS.Signals) => {
    if (stopping) {
      log.warn({ sig }, 'second signal: killing the serving processes');
      for (const slot of live()) slot.worker!.process.kill('SIGKILL');
      shutdownFailed = true;
      return;
    }
    stopping = true;
    for (const slot of slots) clearTimeout(slot.timer);
    const running = live();
    log.info({ sig, processes: running.length }, 'shutting down the serving processes');
    const drain = drainsOn(sig);
    for (const slot of running) {
      const worker = slot.worker!;
      // A worker that lost its channel still gets the request, as the same signal.
      if (worker.isConnected())
        worker.send(
          { idmint: 'shutdown', drain } satisfies Message,
          (err: Error | null) => err && worker.process.kill(sig),
        );
      else worker.process.kill(sig);
    }
    killTimer = setTimeout(
      () => {
        const left = live();
        log.error(
          { pids: left.map((s) => s.worker!.process.pid) },
          `serving processes still running ${SHUTDOWN_TIMEOUT_MS} ms after the shutdown request (and its drain); killing them`,
        );
        shutdownFailed = true;
        for (const slot of left) slot.worker!.process.kill('SIGKILL');
      },
      SHUTDOWN_TIMEOUT_MS + (drain ? config.shutdownDrainMs : 0),
    );
    finishIfDone();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  log.info({ processes, nodeId: config.nodeId }, 'starting serving processes');
  // GET /metrics on any process answers for all of them (cluster-metrics.ts).
  serveClusterMetrics();
  for (const slot of slots) fork(slot);
  return finished;
}

// ---------------------------------------------------------------------------------------------
// Worker

/**
 * Runs one worker: starts the node, tells the primary it serves, and shuts down in order when
 * the primary asks or on SIGINT/SIGTERM (a terminal's Ctrl-C reaches the workers too; that
 * and the primary's request count as one), draining first when the request is a SIGTERM's.
 * A second signal exits at once.
 */
export async function runWorker(config: Config): Promise<void> {
  let node: Node | undefined;
  let wanted: { why: string; drain: boolean } | undefined;
  let closing = false;
  let signals = 0;
  const stop = (why: string, drain: boolean) => {
    wanted ??= { why, drain };
    if (!node || closing) return;
    closing = true;
    const log = node.rt.log;
    log.info({ why }, 'shutting down');
    const started = node;
    (drain ? started.drain() : Promise.resolve())
      .then(() => started.close())
      .then(
        () => process.exit(0),
        (err: Error) => {
          log.error({ err: err.message }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.on('message', (message: Message) => {
    if (message?.idmint === 'shutdown') stop('asked by the primary process', message.drain === true);
  });
  const onSignal = (sig: NodeJS.Signals) => {
    if (++signals > 1) {
      node?.rt.log.warn({ sig }, 'second signal: exiting now');
      process.exit(1);
    }
    stop(sig, drainsOn(sig));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  node = await startNode(config);
  process.send?.({ idmint: 'ready', url: node.url, udpPort: node.udpPort, grpcPort: node.grpcPort } satisfies Message);
  if (wanted) stop(wanted.why, wanted.drain);
}
