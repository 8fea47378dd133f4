// A loopback TCP proxy in front of MySQL that can freeze one connection in the middle of a
// transaction: a rule matches the SQL text a connection sent since its START TRANSACTION;
// the matching packet still goes to MySQL, then nothing more passes either way (the answer
// is held), as when a process hangs or the network stalls right there. A client that goes
// away (a killed process) has its server side closed too, as the kernel would, so MySQL
// rolls back whatever that connection had not committed.
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { LoopbackProxy } from './loopback-proxy.js';

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

export class SqlFreezeProxy extends LoopbackProxy {
  private readonly armed: Armed[] = [];
  readonly frozen: Frozen[] = [];

  static start(targetPort: number, targetHost = '127.0.0.1'): Promise<SqlFreezeProxy> {
    return new SqlFreezeProxy(targetPort, targetHost).listen();
  }

  /** One-shot: resolves when a connection froze on this rule. */
  arm(rule: FreezeRule): Promise<Frozen> {
    return new Promise((resolve) => this.armed.push({ ...rule, resolve }));
  }

  protected accept(client: Socket): void {
    const upstream = this.connectUpstream(client);
    let frozen = false;
    let inTx = false;
    let tx = '';
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
}
