// The floor of bench:bulk-single's bulk consumer: a bare websocket server, a process of its own,
// that answers the consumer's takes ({"op":"take","req","count","block"}) with binary frames
// of idmint's layout (the take's req and the frame's count as two little-endian 32-bit words,
// then the IDs as 64-bit ones), ascending IDs from one counter, then {"op":"done","req"}. Each
// frame is written before the next is filled (one buffer, used again), at BARE_STREAM_RATE IDs
// a second (0: as fast as the socket takes them). Beside the bare route and echo server it puts
// the same bytes through the same kernel and cores as idmint's bulk consumer does, with nothing
// of idmint's process: what a bulk stream costs single requests on this machine whatever serves
// it. PORT (0: any); prints `listening <url>`; exits on SIGTERM or SIGINT.
import { paced } from './pace.js';
import { WebSocketServer, type WebSocket } from 'ws';

const server = new WebSocketServer({
  host: '127.0.0.1',
  port: Number(process.env.PORT ?? 0),
  perMessageDeflate: false,
});
/** The next ID of the stream. */
let nextId = 1;

/** Fills `frame` with the header and `count` ascending IDs. */
function fill(frame: Buffer, req: number, count: number): void {
  frame.writeUInt32LE(req, 0);
  frame.writeUInt32LE(count, 4);
  for (let i = 0, offset = 8; i < count; i++, offset += 8) {
    frame.writeUInt32LE(nextId % 0x1_0000_0000, offset);
    frame.writeUInt32LE(Math.floor(nextId / 0x1_0000_0000), offset + 4);
    nextId++;
  }
}

/** Writes a take's frames, paced to the rate, then its "done"; stops when the socket closes. */
async function take(socket: WebSocket, req: number, count: number, block: number): Promise<void> {
  const frame = Buffer.alloc(8 + 8 * block);
  for (let sent = 0; sent < count && socket.readyState === socket.OPEN; ) {
    const size = Math.min(block, count - sent);
    await paced(size);
    fill(frame, req, size);
    const view = size === block ? frame : frame.subarray(0, 8 + 8 * size);
    await new Promise<void>((resolve) => socket.send(view, { binary: true }, () => resolve()));
    sent += size;
  }
  if (socket.readyState === socket.OPEN) socket.send(JSON.stringify({ op: 'done', req }));
}

server.on('connection', (socket) => {
  socket.on('message', (data: Buffer) => {
    const message = JSON.parse(data.toString()) as { op: string; req: number; count: number; block: number };
    if (message.op === 'take') void take(socket, message.req, message.count, message.block);
  });
});
server.on('listening', () => {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error(`unexpected address ${address}`);
  process.stdout.write(`listening ws://127.0.0.1:${address.port}\n`);
});
const stop = () => {
  for (const client of server.clients) client.terminate();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
