// Starting idmint for tests: in this process (for inject and direct access to the runtime)
// or as a child process (for multi-process and kill tests).
import type { ChildProcess } from 'node:child_process';
import { startNode, type Node } from '../src/process/serve.js';
import { startTsx } from './child.js';
import { ADMIN_TOKEN, testConfig, testEnv, type TestNames } from './env.js';

export async function startLocalNode(
  names: TestNames,
  extra: Record<string, string> = {},
): Promise<Node & { url: string }> {
  const node = await startNode(testConfig(names, extra));
  return node as Node & { url: string };
}

export interface ChildNode {
  readonly proc: ChildProcess;
  readonly url: string;
  /** The UDP and gRPC ports it listens on (undefined when turned off). */
  readonly udpPort: number | undefined;
  readonly grpcPort: number | undefined;
  readonly pid: number;
  /** Lines the child printed (stdout and stderr). */
  readonly output: string[];
  /** Resolves with the first line (printed so far or later) that passes match. */
  waitForLine(match: (line: string) => boolean, timeoutMs: number): Promise<string>;
  /** SIGTERM and wait for exit. */
  stop(): Promise<number | null>;
  /** SIGKILL and wait for exit. */
  kill(): Promise<void>;
}

/** Spawns `idmint serve` and resolves once it listens. */
export async function spawnNode(
  names: TestNames,
  extra: Record<string, string> = {},
  timeoutMs = 30000,
): Promise<ChildNode> {
  const env = { ...process.env, ...testEnv(names, { LOG_LEVEL: 'info', ...extra }) };
  const child = startTsx(['src/cli.ts', 'serve'], { name: 'idmint child', env });
  try {
    const line = await child.waitForLine((l) => l.includes('"idmint listening"'), timeoutMs);
    const listening = JSON.parse(line) as { address: string; udpPort?: number; grpcPort?: number };
    return {
      proc: child.proc,
      url: listening.address,
      udpPort: listening.udpPort,
      grpcPort: listening.grpcPort,
      pid: child.pid,
      output: child.output,
      waitForLine: (match, timeoutMs) => child.waitForLine(match, timeoutMs),
      stop: () => child.stop(),
      kill: () => child.kill(),
    };
  } catch (err) {
    await child.kill();
    throw err;
  }
}

export const adminHeaders = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };

/** Creates a tag through the admin API of a running node. */
export async function createTag(url: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}/v1/admin/tags`, {
    method: 'POST',
    headers: adminHeaders,
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status !== 201) throw new Error(`creating tag failed: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** GET /v1/ids/:tag?count=n; returns the IDs as bigints, or throws with the error body. */
export async function fetchIds(url: string, tag: string, count: number, query = ''): Promise<bigint[]> {
  const res = await fetch(`${url}/v1/ids/${tag}?count=${count}${query}`);
  const json = (await res.json()) as { ids?: string[]; error?: { code: string } };
  if (res.status !== 200 || !json.ids)
    throw Object.assign(new Error(`ids failed: ${res.status} ${JSON.stringify(json)}`), {
      status: res.status,
      code: json.error?.code,
    });
  return json.ids.map(BigInt);
}
