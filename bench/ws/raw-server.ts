// The websocket benchmark's baseline: a bare `ws` server answering a take message
// ({"req","count","block"}) with binary frames of consecutive u64 counters, under the same
// per-socket buffer bound as idmint's stream, then {"op":"done"}. Run as a process of its own
// by bench/ws.ts; prints {"port":N} once it listens.
import WebSocket, { WebSocketServer } from 'ws';

/** The per-socket buffer bound of both servers (idmint's default STREAM_MAX_BUFFER_BYTES). */
export const BUFFER_BYTES = 4 * 1024 * 1024;

export function serveRaw(): void {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
  let next = 1;
  wss.on('connection', (ws) => {
    let waiting: (() => void) | undefined;
    const onSent = () => {
      const w = waiting;
      waiting = undefined;
      w?.();
    };
    ws.on('message', async (data: Buffer) => {
      const m = JSON.parse(data.toString()) as { req: number; count: number; block: number };
      for (let left = m.count; left > 0 && ws.readyState === WebSocket.OPEN; ) {
        const n = Math.min(left, m.block);
        while (ws.bufferedAmount > 0 && ws.bufferedAmount + 8 + 8 * n > BUFFER_BYTES)
          await new Promise<void>((r) => (waiting = r));
        const buf = Buffer.allocUnsafeSlow(8 + 8 * n);
        buf.writeUInt32LE(m.req, 0);
        buf.writeUInt32LE(n, 4);
        const u32 = new Uint32Array(buf.buffer, 8, 2 * n);
        let lo = next % 4294967296;
        let hi = Math.floor(next / 4294967296);
        for (let i = 0; i < 2 * n; i += 2) {
          u32[i] = lo;
          u32[i + 1] = hi;
          if (++lo === 4294967296) {
            lo = 0;
            hi++;
          }
        }
        next += n;
        left -= n;
        ws.send(buf, { binary: true }, onSent);
      }
      ws.send(`{"op":"done","req":${m.req}}`);
    });
  });
  wss.on('listening', () => console.log(JSON.stringify({ port: (wss.address() as { port: number }).port })));
}

if (process.argv[1]?.endsWith('raw-server.ts')) serveRaw();
