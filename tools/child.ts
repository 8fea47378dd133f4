// Child processes of benchmarks and tests: spawn, keep the lines they print, wait until they
// are ready (a line they print, or a probe that passes), stop them (SIGTERM, then SIGKILL after
// a grace period) and wait for the exit.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, connect, type AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { missingServeFlags } from '../src/process/node-flags.js';

/** The repository's root: where `node --import tsx src/cli.ts` runs. */
export const ROOT = fileURLToPath(new URL('../', import.meta.url));

/**
 * Calls fn with each line a child prints (stdout and stderr) and keeps the last `keep` of them
 * in `output`.
 */
export function eachLine(proc: ChildProcess, output: string[], fn: (line: string) => void, keep = 2000): void {
  let buf = '';
  const onData = (chunk: Buffer) => {
    buf += chunk.toString();
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      output.push(line);
      if (output.length > keep) output.shift();
      fn(line);
    }
  };
  proc.stdout?.on('data', onData);
  proc.stderr?.on('data', onData);
}

export interface ChildOptions {
  /** Named in errors. */
  readonly name: string;
  readonly cwd?: string;
  /** The whole environment of the child (default: this process's). */
  readonly env?: NodeJS.ProcessEnv;
  /** Run it on this CPU only (`taskset -c`). */
  readonly cpu?: number;
  /** Let the child write to this process's stdout and stderr instead of keeping its lines. */
  readonly inherit?: boolean;
}

export interface Child {
  readonly name: string;
  readonly proc: ChildProcess;
  readonly pid: number;
  /** The last 2000 lines it printed (stdout and stderr). */
  readonly output: string[];
  /** Its exit code (null when a signal ended it) once it exited; undefined while it runs. */
  readonly exitCode: number | null | undefined;
  readonly exited: Promise<number | null>;
  /** Calls fn with every line printed from now on. */
  onLine(fn: (line: string) => void): void;
  /** Resolves with the first line (printed so far or later) that passes match. */
  waitForLine(match: (line: string) => boolean, timeoutMs: number): Promise<string>;
  /** Polls probe until it passes; fails when the child exits first or the time runs out. */
  waitUntil(probe: () => Promise<boolean> | boolean, timeoutMs: number, everyMs?: number): Promise<void>;
  /** SIGTERM, SIGKILL after graceMs (never, when undefined), and wait for the exit. */
  stop(graceMs?: number): Promise<number | null>;
  /** SIGKILL and wait for the exit. */
  kill(): Promise<void>;
}

export function startChild(file: string, args: readonly string[], opts: ChildOptions): Child {
  const [cmd, argv] = opts.cpu === undefined ? [file, args] : ['taskset', ['-c', String(opts.cpu), file, ...args]];
  const proc = spawn(cmd, argv, {
    cwd: opts.cwd ?? ROOT,
    env: opts.env ?? process.env,
    stdio: ['ignore', opts.inherit ? 'inherit' : 'pipe', opts.inherit ? 'inherit' : 'pipe'],
  });
  const output: string[] = [];
  const listeners = new Set<(line: string) => void>();
  eachLine(proc, output, (line) => {
    for (const fn of listeners) fn(line);
  });
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve((exitCode = code))));
  // 'close', not 'exit': the last lines may still be on their way through the pipes at exit.
  const closed = new Promise<number | null>((resolve) => proc.once('close', (code) => resolve(code)));
  const tail = () => output.slice(-20).join('\n');
  const child: Child = {
    name: opts.name,
    proc,
    pid: proc.pid!,
    output,
    get exitCode() {
      return exitCode;
    },
    exited,
    onLine(fn) {
      listeners.add(fn);
    },
    waitForLine(match, timeoutMs) {
      const seen = output.find(match);
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const done = () => {
          clearTimeout(timer);
          listeners.delete(onLine);
        };
        const onLine = (line: string) => {
          if (!match(line)) return;
          done();
          resolve(line);
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`${opts.name} was not ready within ${timeoutMs} ms:\n${tail()}`));
        }, timeoutMs);
        listeners.add(onLine);
        void closed.then((code) => {
          done();
          reject(new Error(`${opts.name} exited with ${code} before it was ready:\n${tail()}`));
        });
      });
    },
    async waitUntil(probe, timeoutMs, everyMs = 100) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        if (exitCode !== undefined)
          throw new Error(`${opts.name} exited with ${exitCode} before it was ready:\n${tail()}`);
        try {
          if (await probe()) return;
        } catch {
          // not up yet
        }
        if (Date.now() > deadline) throw new Error(`${opts.name} was not ready within ${timeoutMs} ms:\n${tail()}`);
        await sleep(everyMs);
      }
    },
    async stop(graceMs) {
      if (exitCode !== undefined) return exitCode;
      proc.kill('SIGTERM');
      const t = graceMs === undefined ? undefined : setTimeout(() => proc.kill('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(t);
      return code;
    },
    async kill() {
      if (exitCode !== undefined) return;
      proc.kill('SIGKILL');
      await exited;
    },
  };
  return child;
}

/**
 * `node [nodeFlags] --import tsx <args>` (TypeScript run as is), from the repository's root. A
 * server (`src/cli.ts serve`) also gets the node flags it ships with (src/process/node-flags.ts)
 * that neither nodeFlags nor its NODE_OPTIONS sets, so tests and benchmarks run it as it is deployed.
 */
export function startTsx(
  args: readonly string[],
  opts: ChildOptions & { readonly nodeFlags?: readonly string[] },
): Child {
  const given = opts.nodeFlags ?? [];
  const serving = args[0] === 'src/cli.ts' && args[1] === 'serve';
  // Counted as the server counts them: its command line and the NODE_OPTIONS of its environment.
  const flags = serving ? [...given, ...missingServeFlags(given, (opts.env ?? process.env).NODE_OPTIONS)] : given;
  return startChild(process.execPath, [...flags, '--import', 'tsx', ...args], opts);
}

export interface RunResult {
  /** Exit code, or null when a signal ended the child. */
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs a command to its end and returns what it printed. Unlike spawnSync it leaves this
 * process's event loop running, so a node the test hosts in-process keeps serving meanwhile.
 * SIGKILL after timeoutMs (default 60 s).
 */
export function runToEnd(
  file: string,
  args: readonly string[],
  opts: { readonly env?: NodeJS.ProcessEnv; readonly timeoutMs?: number } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const proc = spawn(file, args, { cwd: ROOT, env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    proc.stdout.on('data', (b: Buffer) => out.push(b));
    proc.stderr.on('data', (b: Buffer) => err.push(b));
    const timer = setTimeout(() => proc.kill('SIGKILL'), opts.timeoutMs ?? 60000);
    proc.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    proc.once('close', (status, signal) => {
      clearTimeout(timer);
      resolve({
        status,
        signal,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
  });
}

/** runToEnd of `node --import tsx <args>` from the repository's root. */
export function runTsx(
  args: readonly string[],
  opts: { readonly env?: NodeJS.ProcessEnv; readonly timeoutMs?: number } = {},
): Promise<RunResult> {
  return runToEnd(process.execPath, ['--import', 'tsx', ...args], opts);
}

/**
 * The kernel's ephemeral ports (Linux: /proc/sys/net/ipv4/ip_local_port_range), which it hands
 * to every outgoing connection and every listen on port 0.
 */
function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high) && low > 1024) return [low, high];
  } catch {
    // Not Linux: the range Linux uses by default.
  }
  return [32768, 60999];
}

/** The port a loopback TCP listen on `port` (0: the kernel's choice) got, closed again; undefined when it failed. */
function listenOnce(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(undefined));
    s.listen(port, '127.0.0.1', () => {
      const got = (s.address() as AddressInfo).port;
      s.close(() => resolve(got));
    });
  });
}

/** Ports fewer than this outside the ephemeral range are too few to draw from at random. */
const MIN_POOL = 1000;

/**
 * The ports freePort draws from, given the kernel's ephemeral range [low, high]: up to 12,000
 * just below it (not under 10,000), else as many just above it (not over 65,535); undefined
 * when neither side holds MIN_POOL ports (the range covers nearly every port).
 */
export function portPool(low: number, high: number): [number, number] | undefined {
  const below: [number, number] = [Math.max(10_000, low - 12_000), low - 1];
  const above: [number, number] = [high + 1, Math.min(65_535, high + 12_000)];
  for (const [from, to] of [below, above]) if (to - from + 1 >= MIN_POOL) return [from, to];
  return undefined;
}

/**
 * A free loopback TCP port (free when asked: another process may take it before it is used),
 * chosen at random outside the kernel's ephemeral range (portPool): a port from that range
 * (listen on port 0) was seen taken between this call and the test's own bind, by one of the
 * many outgoing connections the suite opens, which draw their local ports from it; outside it
 * only another caller of this function can take it. Where the range leaves too few ports
 * outside it, the kernel's choice.
 */
export async function freePort(): Promise<number> {
  const pool = portPool(...ephemeralRange());
  if (pool === undefined) {
    const port = await listenOnce(0);
    if (port === undefined) throw new Error('no loopback port to listen on');
    return port;
  }
  const [from, to] = pool;
  for (let tries = 0; tries < 50; tries++) {
    const port = from + Math.floor(Math.random() * (to - from + 1));
    if ((await listenOnce(port)) !== undefined) return port;
  }
  throw new Error(`no free loopback port found in ${from}..${to}`);
}

/** Whether something accepts connections on the loopback port. */
export function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1');
    sock.once('connect', () => (sock.destroy(), resolve(true)));
    sock.once('error', () => (sock.destroy(), resolve(false)));
  });
}

/** Waits until the loopback port is open (up) or closed (!up). */
export async function waitPort(port: number, up: boolean, timeoutMs = 10000, what = `port ${port}`): Promise<void> {
  const until = Date.now() + timeoutMs;
  while ((await portOpen(port)) !== up) {
    if (Date.now() > until)
      throw new Error(`${what}: port ${port} still ${up ? 'closed' : 'open'} after ${timeoutMs} ms`);
    await sleep(50);
  }
}

/** pino JSON lines of a child's output, parsed; other lines skipped. */
export function logLines(output: readonly string[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of output) {
    if (!line.startsWith('{')) continue;
    try {
      out.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // a line cut by the buffer: not a log record
    }
  }
  return out;
}
