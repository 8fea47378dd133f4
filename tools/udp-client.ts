// A UDP client of idmint's id_server protocol: one socket, one datagram in flight, replies counted.
import assert from 'node:assert/strict';
import { createSocket, type Socket } from 'node:dgram';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };
export type Json = { [k: string]: JsonValue };

/** One UDP socket for sequential exchanges: one datagram in flight, replies counted. */
export class UdpClient {
  private readonly inbox: Buffer[] = [];
  private wake?: () => void;
  received = 0;

  private constructor(private readonly sock: Socket) {
    sock.on('message', (m) => {
      this.received++;
      this.inbox.push(m);
      this.wake?.();
    });
  }

  static async open(): Promise<UdpClient> {
    const sock = createSocket('udp4');
    await new Promise<void>((resolve) => sock.bind(0, '127.0.0.1', resolve));
    return new UdpClient(sock);
  }

  /** Sends a datagram; resolves with the send error (EMSGSIZE for a datagram UDP cannot carry), if any. */
  send(port: number, data: Buffer): Promise<NodeJS.ErrnoException | null> {
    return new Promise((resolve) => this.sock.send(data, port, '127.0.0.1', (e) => resolve(e ?? null)));
  }

  /** Sends a datagram and waits for the reply, as raw text. */
  async exchange(port: number, data: Buffer | string, timeoutMs = 3000): Promise<string> {
    assert.equal(this.inbox.length, 0, `a datagram arrived unasked: ${this.inbox[0]?.toString().slice(0, 200)}`);
    const err = await this.send(port, typeof data === 'string' ? Buffer.from(data) : data);
    if (err) throw err;
    try {
      return await this.next(timeoutMs);
    } catch {
      throw new Error(`no reply within ${timeoutMs} ms to ${String(data).slice(0, 200)}`);
    }
  }

  /**
   * Sends a datagram that may get no reply, then `probe` (a request whose reply carries
   * `marker`): the replies that arrived before the probe's (zero or one when the server
   * answers in order, as on loopback), raw. The probe's reply is consumed.
   */
  async exchangeOrNone(
    port: number,
    data: Buffer | string,
    probe: string,
    marker: string,
    timeoutMs = 3000,
  ): Promise<string[]> {
    assert.equal(this.inbox.length, 0, `a datagram arrived unasked: ${this.inbox[0]?.toString().slice(0, 200)}`);
    for (const d of [data, probe]) {
      const err = await this.send(port, typeof d === 'string' ? Buffer.from(d) : d);
      if (err) throw err;
    }
    const before: string[] = [];
    for (;;) {
      const raw = await this.next(timeoutMs);
      if (raw.includes(marker)) return before;
      before.push(raw);
    }
  }

  /** The next datagram received, raw. */
  private async next(timeoutMs: number): Promise<string> {
    const until = Date.now() + timeoutMs;
    while (this.inbox.length === 0) {
      const left = until - Date.now();
      if (left <= 0) throw new Error(`no datagram within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.wake = undefined;
    }
    return this.inbox.shift()!.toString('utf8');
  }

  async request(port: number, msg: Json | string): Promise<Json> {
    return JSON.parse(await this.exchange(port, typeof msg === 'string' ? msg : JSON.stringify(msg))) as Json;
  }

  close(): void {
    this.sock.close();
  }
}
