// The primary of `idmint serve --processes N` started as a child with the test environment, its
// output kept and read as log records, for the tests of the serving processes.
import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { logLines } from '../../tools/child.js';
import { testEnv, type TestNames } from '../../tools/env.js';

/** The repository's root, where the CLI is run from. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface Primary {
  readonly proc: ChildProcess;
  readonly output: string[];
  readonly exited: Promise<number | null>;
  /** Log records of the child's output so far. */
  logs(): Record<string, unknown>[];
  /** Resolves with the first log record that matches, waiting for it up to timeoutMs. */
  waitForLog(
    match: (l: Record<string, unknown>) => boolean,
    timeoutMs: number,
    what: string,
  ): Promise<Record<string, unknown>>;
}

/** `serve --processes <processes>` with the test environment and extra settings, its output collected. */
export function startPrimary(names: TestNames, processes: number, extra: Record<string, string>): Primary {
  const env = { ...process.env, ...testEnv(names, { LOG_LEVEL: 'info', ...extra }) };
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve', '--processes', String(processes)], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  let buf = '';
  const onData = (chunk: Buffer) => {
    buf += chunk.toString();
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      output.push(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
  };
  proc.stdout!.on('data', onData);
  proc.stderr!.on('data', onData);
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const logs = () => logLines(output);
  const waitForLog = async (match: (l: Record<string, unknown>) => boolean, timeoutMs: number, what: string) => {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const hit = logs().find(match);
      if (hit) return hit;
      if (proc.exitCode !== null || Date.now() > until)
        throw new Error(`${what}: not logged (exit code ${proc.exitCode}):\n${output.slice(-30).join('\n')}`);
      await sleep(50);
    }
  };
  return { proc, output, exited, logs, waitForLog };
}
