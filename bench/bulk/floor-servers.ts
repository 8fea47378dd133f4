// The floor servers of bench:bulk-single, each a process of its own: the bare Fastify route
// (bench/bare-server.ts), the bare dgram echo server of bench:udp, and the bare bulk stream
// (bare-stream.ts) that the bulk consumer takes from beside them.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startTsx, type Child } from '../../tools/child.js';

/** The bare Fastify route on `port`. */
export function startBare(port: number): Child {
  return startTsx(['bench/bare-server.ts'], { name: 'bare', env: { ...process.env, PORT: String(port) } });
}

/** The bare dgram echo server of bench:udp; resolves with its port. */
export function startEcho(): { pid: number; port: Promise<number>; stop: () => void } {
  const proc = fork(fileURLToPath(new URL('../udp/servers.ts', import.meta.url)), ['echo'], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const port = new Promise<number>((resolve) => proc.once('message', (m) => resolve((m as { port: number }).port)));
  return { pid: proc.pid ?? 0, port, stop: () => proc.kill() };
}

/** The bare bulk stream at `rate` IDs a second (0: as fast as it can), ready; with its ws:// URL. */
export async function startBareStream(rate: number): Promise<{ child: Child; url: string }> {
  const child = startTsx(['bench/bulk/bare-stream.ts'], {
    name: 'bare-stream',
    env: { ...process.env, PORT: '0', BARE_STREAM_RATE: String(Math.round(rate)) },
  });
  const line = await child.waitForLine((l) => l.startsWith('listening '), 120_000);
  return { child, url: line.slice('listening '.length).trim() };
}
