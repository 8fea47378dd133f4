// The floor servers of bench:bulk-single, each a process of its own: the bare Fastify route
// (bench/bare-server.ts), the bare dgram echo server of bench:udp, and the bare bulk stream that
// the bulk consumer takes from beside them (bare-stream.ts for the websocket consumer,
// bare-grpc-stream.ts for the gRPC one).
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startTsx, type Child } from '../../tools/child.js';
import type { Transport } from './options.js';

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

/**
 * The bare bulk stream of `transport` at `rate` IDs a second (0: as fast as it can),
 * ready; with its address (a ws:// URL, or 127.0.0.1:port for gRPC).
 */
export async function startBareStream(rate: number, transport: Transport): Promise<{ child: Child; url: string }> {
  const script = transport === 'ws' ? 'bench/bulk/bare-stream.ts' : 'bench/bulk/bare-grpc-stream.ts';
  const child = startTsx([script], {
    name: 'bare-stream',
    env: { ...process.env, PORT: '0', GRPC_PORT: '0', BARE_STREAM_RATE: String(Math.round(rate)) },
  });
  const line = await child.waitForLine((l) => l.startsWith('listening '), 120_000);
  return { child, url: line.slice('listening '.length).trim() };
}
