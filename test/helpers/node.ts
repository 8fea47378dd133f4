// Starting idmint for tests: in this process (for inject and direct access to the runtime)
// or as a child process (for multi-process and kill tests).
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startNode, type Node } from '../../src/api/server.js';
import { ADMIN_TOKEN, testConfig, testEnv, type TestNames } from './env.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export async function startLocalNode(names: TestNames, extra: Record<string, string> = {}): Promise<Node & { url: string }> {
  const node = await startNode(testConfig(names, extra));
  return node as Node & { url: string };
}

/**
 * Calls fn with each line a child prints (stdout and stderr) and keeps the last 2000 of them
 * in `output`.
 */
export function eachLine(proc: ChildProcess, output: string[], fn: (line: string) => void): void {
  let buf = '';
  const onData = (chunk: Buffer) => {
    buf += chunk.toString();
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      output.push(line);
      if (output.length > 2000) output.shift();
      fn(line);
    }
  };
  proc.stdout!.on('data', onData);
  proc.stderr!.on('data', onData);
}

export interface ChildNode {
  readonly proc: ChildProcess;
  readonly url: string;
  readonly pid: number;
  /** Lines the child printed (stdout and stderr). */
  readonly output: string[];
  /** SIGTERM and wait for exit. */
  stop(): Promise<number | null>;
  /** SIGKILL and wait for exit. */
  kill(): Promise<void>;
}

/** Spawns `idmint serve` and resolves once it listens. */
export function spawnNode(names: TestNames, extra: Record<string, string> = {}, timeoutMs = 30000): Promise<ChildNode> {
  const env = { ...process.env, ...testEnv(names, { LOG_LEVEL: 'info', ...extra }) };
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`idmint child did not start within ${timeoutMs} ms:\n${output.join('\n')}`));
    }, timeoutMs);
    eachLine(proc, output, (line) => {
      if (line.includes('"idmint listening"')) {
        clearTimeout(timer);
        const url = JSON.parse(line).address as string;
        resolve({
          proc,
          url,
          pid: proc.pid!,
          output,
          stop: () => {
            proc.kill('SIGTERM');
            return exited;
          },
          kill: async () => {
            proc.kill('SIGKILL');
            await exited;
          },
        });
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`idmint child exited with ${code} before listening:\n${output.join('\n')}`));
    });
  });
}

export const adminHeaders = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };

/** Creates a tag through the admin API of a running node. */
export async function createTag(url: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}/v1/admin/tags`, { method: 'POST', headers: adminHeaders, body: JSON.stringify(body) });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status !== 201) throw new Error(`creating tag failed: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** GET /v1/ids/:tag?count=n; returns the IDs as bigints, or throws with the error body. */
export async function fetchIds(url: string, tag: string, count: number, query = ''): Promise<bigint[]> {
  const res = await fetch(`${url}/v1/ids/${tag}?count=${count}${query}`);
  const json = (await res.json()) as { ids?: string[]; error?: { code: string } };
  if (res.status !== 200 || !json.ids) throw Object.assign(new Error(`ids failed: ${res.status} ${JSON.stringify(json)}`), { status: res.status, code: json.error?.code });
  return json.ids.map(BigInt);
}
