// What a websocket write costs the writing process by its size: a ws server writes a 400 KB
// message as fragments of one size, one fragment per turn of its event loop (as a bulk take's
// turns do, src/api/bulk-turns.ts), to a client in a process of its own that reads them, and
// times each send() call (what the serving thread spends in it: ws's framing and the socket's
// write, which on a local connection runs the reader's side of TCP too). The smallest size,
// 1 KiB, is the floor: the cost of a write that carries little (a reader's websocket library
// caps a message's fragments: ws at 16,384). Sizes take turns in interleaved rounds; medians.
// With --pin the server runs on CPU 1 and the client on CPU 0. Each run is recorded in
// bench/results/runs as ws-fragments (--no-write: printed only).
// usage: npm run bench:ws-fragments -- [--seconds N] [--rounds N] [--pin] [--no-write]
import { spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { setImmediate as turn } from 'node:timers/promises';
import { WebSocket, WebSocketServer } from 'ws';
import { pinProcess } from '../../tools/cpu.js';
import { markdownTable } from '../../tools/table.js';
import { readBenchOptions } from '../common-options.js';
import { startRun } from '../record.js';
import { medianOrNaN } from '../stats.js';

const SIZES = [1024, 4096, 8192, 16384, 32768, 65536];
const MESSAGE_BYTES = 400_000;
/** Unsent bytes the server lets build up before it waits for the reader. */
const MOST_BUFFERED = 1_000_000;

async function client(port: string): Promise<void> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}`, { perMessageDeflate: false });
  ws.on('message', () => {});
  await new Promise((resolve) => ws.once('close', resolve));
}

/** Median of the µs each send() of `size` bytes took over `seconds`. */
async function measure(socket: WebSocket, message: Buffer, size: number, seconds: number): Promise<number> {
  const took: number[] = [];
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    for (let at = 0; at < message.length; at += size) {
      const last = Math.min(message.length, at + size);
      const t0 = performance.now();
      socket.send(message.subarray(at, last), { binary: true, fin: last === message.length });
      took.push((performance.now() - t0) * 1000);
      await turn();
      while (socket.bufferedAmount > MOST_BUFFERED) await new Promise((r) => setTimeout(r, 1));
    }
  }
  return medianOrNaN(took);
}

async function main(): Promise<void> {
  if (process.argv[2] === 'client') return client(process.argv[3]);
  const opts = { seconds: 2, rounds: 3, pin: false, write: true };
  const recorder = startRun('ws-fragments');
  readBenchOptions(
    process.argv.slice(2),
    'npm run bench:ws-fragments -- [--seconds N] [--rounds N] [--pin] [--no-write]',
    { seconds: [1, 60], rounds: [1, 20], pin: true, write: true },
    opts,
  );
  if (opts.pin) pinProcess(process.pid, 1);
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: false });
  await new Promise((resolve) => wss.once('listening', resolve));
  const { port } = wss.address() as AddressInfo;
  const argv = ['--import', 'tsx', new URL(import.meta.url).pathname, 'client', String(port)];
  const reader = opts.pin
    ? spawn('taskset', ['-c', '0', process.execPath, ...argv], { stdio: 'inherit' })
    : spawn(process.execPath, argv, { stdio: 'inherit' });
  const socket = await new Promise<WebSocket>((resolve) => wss.once('connection', resolve));
  const message = Buffer.alloc(MESSAGE_BYTES, 7);
  const bySize = new Map<number, number[]>(SIZES.map((s) => [s, []]));
  // A first round warms ws's code and the socket up; it is left out.
  for (let round = 0; round <= opts.rounds; round++) {
    for (const size of SIZES) {
      const us = await measure(socket, message, size, opts.seconds);
      if (round > 0) bySize.get(size)!.push(us);
    }
  }
  socket.close();
  wss.close();
  reader.kill();
  const floor = medianOrNaN(bySize.get(SIZES[0])!);
  const rows = [
    ['fragment (bytes)', 'µs a send (median)', '÷ floor', 'µs per 8 KiB'],
    ...SIZES.map((size) => {
      const us = medianOrNaN(bySize.get(size)!);
      return [
        String(size),
        us.toFixed(1),
        (us / floor).toFixed(2),
        size >= 8192 ? ((us * 8192) / size).toFixed(1) : '-',
      ];
    }),
  ];
  console.log(markdownTable(rows));
  if (opts.write) recorder.finish({ rows, ratio: { column: '÷ floor', baseline: String(SIZES[0]) } });
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
