// Runs an idmint command line as a child process, given as it would be typed (`node
// dist/cli.js serve`, `npx idmint serve`), with its output on pipes or on a real terminal
// (a pseudo-terminal from util-linux `script`), and resolves once it listens. A command that
// runs through wrappers (npx, a shell) is stopped as a whole: its own process group, or the
// server process itself behind the terminal.
import { spawn, type ChildProcess } from 'node:child_process';
import { eachLine } from '../../tools/child.js';

export interface ServeOptions {
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
  /** Give the command a terminal as stdout (process.stdout.isTTY) instead of a pipe. */
  readonly terminal?: boolean;
  readonly timeoutMs?: number;
}

export interface ServeProcess {
  readonly url: string;
  /** Lines printed so far, colour codes and carriage returns removed. */
  readonly output: string[];
  /** SIGTERM (SIGKILL after 15 s) and wait for the exit. */
  stop(): Promise<void>;
}

// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g;
const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** The environment without what an enclosing `npm run` exports (npm_config_*, npm_package_*...). */
export function withoutNpmVars(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([k]) => !/^npm_/i.test(k)));
}

export function startServe(command: readonly string[], opts: ServeOptions): Promise<ServeProcess> {
  const [file, ...args] = command;
  let proc: ChildProcess;
  let serverPid: number | undefined;
  if (opts.terminal) {
    // The shell prints its pid, then becomes the command (exec): that pid is the server's.
    const inner = `echo "PID=$$"; exec ${command.map(quote).join(' ')}`;
    proc = spawn('script', ['-qec', inner, '/dev/null'], {
      cwd: opts.cwd,
      env: opts.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } else {
    proc = spawn(file!, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  }
  const output: string[] = [];
  // 'close', not 'exit': the last lines may still be on their way through the pipes at exit.
  const exited = new Promise<void>((resolve) => proc.once('close', () => resolve()));
  const signal = (sig: NodeJS.Signals) => {
    try {
      if (opts.terminal) process.kill(serverPid ?? proc.pid!, sig);
      else process.kill(-proc.pid!, sig);
    } catch {
      // already gone
    }
  };
  const stop = async () => {
    signal('SIGTERM');
    const timer = setTimeout(() => {
      signal('SIGKILL');
      proc.kill('SIGKILL');
    }, 15000);
    await exited;
    clearTimeout(timer);
  };
  const timeoutMs = opts.timeoutMs ?? 30000;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`${command.join(' ')} did not start within ${timeoutMs} ms:\n${output.join('\n')}`));
    }, timeoutMs);
    const lines: string[] = [];
    eachLine(proc, lines, (raw) => {
      const line = raw.replace(ANSI, '').replace(/\r$/, '');
      output.push(line);
      const pid = /^PID=(\d+)$/.exec(line);
      if (pid) serverPid = Number(pid[1]);
      const address = line.includes('idmint listening') ? /"address":"([^"]+)"/.exec(line) : null;
      if (address) {
        clearTimeout(timer);
        resolve({ url: address[1]!, output, stop });
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${command.join(' ')} exited with ${code} before listening:\n${output.join('\n')}`));
    });
  });
}
