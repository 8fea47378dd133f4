// A loopback TCP proxy in front of MySQL that can freeze one connection in the middle of a
// transaction: a rule matches the SQL text a connection sent since its START TRANSACTION;
// the matching packet still goes to MySQL, then nothing more passes either way (the answer
// is held), as when a process hangs or the network stalls right there. A client that goes
// away (a killed process) has its server side closed too, as the kernel would, so MySQL
// rolls back whatever that connection had not committed.
import { connect, createServer, type Server, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

export interface FreezeRule {
  readonly name: string;
  /** Tested against the text (latin1) sent since the connection's START TRANSACTION. */
  readonly pattern: RegExp;
}

export interface Frozen {
  readonly rule: string;
  /** performance.now() when the connection froze. */
  readonly at: number;
  /** The transaction's SQL as sent, up to and including the matching packet. */
  readonly sql: string;
}

interface Armed extends FreezeRule {
  readonly resolve: (f: Frozen) => void;
}

export class SqlFreezeProxy {
  private readonly armed: Armed[] = [];
  private readonly sockets = new Set<Socket>();
  readonly frozen: Frozen[] = [];

  private constructor(private readonly server: Server, readonly port: number) {}

  static async start(targetPort: number, targetHost = '127.0.0.1'): Promise<SqlFreezeProxy> {
    let self: SqlFreezeProxy | undefined;
    const server = createServer((client) => self!.accept(client, targetHost, targetPort));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    self = new SqlFreezeProxy(server, (server.address() as { port: number }).port);
    return self;
  }

  /** One-shot: resolves when a connection froze on this rule. */
  arm(rule: FreezeRule): Promise<Frozen> {
    return new Promise((resolve) => this.armed.push({ ...rule, resolve }));
  }

  private accept(client: Socket, host: string, port: number): void {
    const upstream = connect(port, host);
    let frozen = false;
    let inTx = false;
    let tx = '';
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.once('close', () => this.sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    upstream.on('data', (chunk: Buffer) => {
      if (!frozen) client.write(chunk);
    });
    client.on('data', (chunk: Buffer) => {
      if (frozen) return;
      const text = chunk.toString('latin1');
      if (/START TRANSACTION|\bBEGIN\b/i.test(text)) {
        inTx = true;
        tx = '';
      }
      if (inTx) {
        tx = (tx + text).slice(-65536);
        const i = this.armed.findIndex((r) => r.pattern.test(tx));
        if (i >= 0) {
          const [rule] = this.armed.splice(i, 1);
          upstream.write(chunk);
          frozen = true;
          const f: Frozen = { rule: rule.name, at: performance.now(), sql: tx };
          this.frozen.push(f);
          rule.resolve(f);
          return;
        }
        if (/\b(COMMIT|ROLLBACK)\b/i.test(text)) {
          inTx = false;
          tx = '';
        }
      }
      upstream.write(chunk);
    });
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
