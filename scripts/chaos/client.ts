// One client process of the chaos campaign (forked by campaign.ts with its settings in
// CHAOS_CLIENT): loops that ask idmint processes for IDs over HTTP (single and batch), the
// websocket stream (src/client) and UDP (the id_server protocol), and record every request.
// Stops on the parent's "stop", when the parent goes away, or at its own hard deadline.
import { createSocket, type Socket } from 'node:dgram';
import { setTimeout as sleep } from 'node:timers/promises';
import { IdmintClient, IdmintClientError } from '../../src/client/index.js';
import { UDP_CODES } from '../../src/core/udp-protocol.js';
import { RecordWriter, countRuns, nowUs, toRuns, type Proto, type Rec, type Runs } from './recorder.js';
import { rng, type Rng } from '../../tools/prng.js';

export interface ClientSettings {
  readonly name: string;
  readonly seed: number;
  readonly out: string;
  readonly slots: readonly { readonly http: string; readonly udpPort: number }[];
  readonly tags: { readonly global: string; readonly node: string; readonly snowflake: string; readonly rule: string };
  /** Rule tags count per app: the apps this client asks for. */
  readonly apps: readonly string[];
  /** Pause after each answer, ms (keeps the machine usable). */
  readonly pauseMs: number;
  /** Exit no matter what at this Date.now(). */
  readonly hardDeadline: number;
}

const HTTP_TIMEOUT_MS = 8000;
// A rule's new period or a dry segment waits up to REFILL_WAIT_MS (3 s) for MySQL before answering.
const UDP_TIMEOUT_MS = 8000;
const UDP_NAME = new Map<number, string>(Object.entries(UDP_CODES).map(([name, v]) => [v.code, name]));

class ClientProcess {
  private running = true;
  private readonly writer: RecordWriter;
  private ids = 0;
  private requests = 0;
  private failed = 0;
  private readonly ws: IdmintClient[];

  constructor(private readonly s: ClientSettings) {
    this.writer = new RecordWriter(s.out);
    this.ws = s.slots.map((slot) => new IdmintClient({ url: slot.http, timeoutMs: HTTP_TIMEOUT_MS, maxInFlight: 2 }));
  }

  stop(): void {
    this.running = false;
  }

  private record(rec: Rec): void {
    this.requests++;
    if (rec.r) this.ids += countRuns(rec.r);
    else if (rec.s) this.ids += rec.s.length;
    else this.failed++;
    this.writer.write(rec);
  }

  progress(): { ids: number; requests: number; failed: number } {
    return { ids: this.ids, requests: this.requests, failed: this.failed };
  }

  async run(): Promise<void> {
    const r = (k: number) => rng(this.s.seed * 16 + k);
    await Promise.all([
      this.httpLoop('hs', r(1)),
      this.httpLoop('hb', r(2)),
      this.httpLoop('hb', r(3)),
      this.wsLoop(r(4)),
      this.udpLoop(r(5)),
    ]);
    for (const c of this.ws) c.close();
    await this.writer.end();
  }

  private pickTag(g: Rng, withRule: boolean): { tag: string; app?: string } {
    const t = this.s.tags;
    const all = withRule ? [t.global, t.node, t.snowflake, t.rule] : [t.global, t.node, t.snowflake];
    const tag = g.pick(all);
    return tag === t.rule ? { tag, app: g.pick(this.s.apps) } : { tag };
  }

  private async pause(ok: boolean): Promise<void> {
    await sleep(ok ? this.s.pauseMs : 30);
  }

  private async httpLoop(p: 'hs' | 'hb', g: Rng): Promise<void> {
    while (this.running) {
      const slot = g.int(0, this.s.slots.length - 1);
      const { tag, app } = this.pickTag(g, true);
      const n = p === 'hs' ? 1 : app ? g.int(1, 50) : g.int(1, 500);
      const q = new URLSearchParams();
      if (app) q.set('app', app);
      if (p === 'hb') q.set('count', String(n));
      const url = `${this.s.slots[slot].http}/v1/${p === 'hs' ? 'id' : 'ids'}/${tag}${q.size ? `?${q}` : ''}`;
      const base = { c: this.s.name, p, tag, app, slot, n } as const;
      const t0 = nowUs();
      let rec: Rec;
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(HTTP_TIMEOUT_MS) });
        const text = await res.text();
        const t1 = nowUs();
        let body: { id?: unknown; ids?: unknown; error?: { code?: unknown } } | undefined;
        try {
          body = JSON.parse(text) as typeof body;
        } catch {
          body = undefined;
        }
        if (res.status === 200) {
          const raw = p === 'hs' ? (body?.id === undefined ? undefined : [body.id]) : body?.ids;
          if (!Array.isArray(raw) || !raw.every((x) => typeof x === 'string'))
            rec = { ...base, t0, t1, bad: `200 without IDs: ${text.slice(0, 120)}` };
          else rec = this.answer(base, t0, t1, raw as string[], app !== undefined);
        } else if (typeof body?.error?.code === 'string') {
          rec = { ...base, t0, t1, err: body.error.code };
        } else {
          rec = { ...base, t0, t1, bad: `HTTP ${res.status} without an error code: ${text.slice(0, 120)}` };
        }
      } catch (err) {
        const e = err as Error & { cause?: { code?: string } };
        rec = {
          ...base,
          t0,
          t1: nowUs(),
          tr: `${e.name === 'TimeoutError' ? 'TIMEOUT' : (e.cause?.code ?? e.message)}`,
        };
      }
      this.record(rec);
      await this.pause(rec.err === undefined && rec.tr === undefined && rec.bad === undefined);
    }
  }

  /** A 200's IDs: numeric ones as runs (and checked to be n of them), rule IDs as strings. */
  private answer(base: Omit<Rec, 't0' | 't1'>, t0: number, t1: number, raw: readonly string[], rule: boolean): Rec {
    const bad = raw.length !== base.n ? `asked for ${base.n} IDs, got ${raw.length}` : undefined;
    if (rule) return { ...base, t0, t1, s: [...raw], ...(bad ? { bad } : {}) };
    if (!raw.every((x) => /^[1-9]\d*$/.test(x)))
      return { ...base, t0, t1, bad: `not decimal IDs: ${raw.slice(0, 3).join(',')}` };
    return { ...base, t0, t1, r: toRuns(raw.map(BigInt)), ...(bad ? { bad } : {}) };
  }

  private async wsLoop(g: Rng): Promise<void> {
    while (this.running) {
      const slot = g.int(0, this.s.slots.length - 1);
      const { tag, app } = this.pickTag(g, true);
      const n = app ? g.int(1, 200) : g.int(100, 2000);
      const base = { c: this.s.name, p: 'ws' as Proto, tag, app, slot, n };
      const client = this.ws[slot];
      const t0 = nowUs();
      let rec: Rec;
      try {
        if (app) {
          const ids = await client.take(tag, n, { app });
          rec = this.answer(base, t0, nowUs(), ids, true);
        } else {
          const ids = await client.take(tag, n);
          const t1 = nowUs();
          const r: Runs = toRuns(ids);
          rec = { ...base, t0, t1, r, ...(ids.length !== n ? { bad: `asked for ${n} IDs, got ${ids.length}` } : {}) };
        }
      } catch (err) {
        const t1 = nowUs();
        if (err instanceof IdmintClientError) {
          if (err.code === 'DISCONNECTED' || err.code === 'TIMEOUT') rec = { ...base, t0, t1, tr: err.code };
          else if (err.code === 'PROTOCOL') rec = { ...base, t0, t1, bad: `protocol: ${err.message}` };
          else rec = { ...base, t0, t1, err: err.code };
        } else {
          rec = { ...base, t0, t1, bad: `unexpected: ${(err as Error).message}` };
        }
      }
      this.record(rec);
      await this.pause(rec.r !== undefined || rec.s !== undefined);
    }
  }

  private async udpLoop(g: Rng): Promise<void> {
    const sock: Socket = createSocket('udp4');
    await new Promise<void>((r) => sock.bind(0, '127.0.0.1', r));
    let waiting: { seq: number; resolve: (m: Record<string, unknown>) => void } | undefined;
    sock.on('message', (m) => {
      let msg: Record<string, unknown>;
      try {
        msg = JSON.parse(m.toString('utf8')) as Record<string, unknown>;
      } catch {
        return;
      }
      if (waiting && msg.seq === waiting.seq) waiting.resolve(msg);
    });
    let seq = 0;
    try {
      while (this.running) {
        const slot = g.int(0, this.s.slots.length - 1);
        // The rule tag (id_server's use) and the global segment tag (plain IDs over UDP).
        const tag = g.next() < 0.7 ? this.s.tags.rule : this.s.tags.global;
        const app = g.pick(this.s.apps);
        const rule = tag === this.s.tags.rule;
        const base = { c: this.s.name, p: 'udp' as Proto, tag, app: rule ? app : undefined, slot, n: 1 };
        const mySeq = ++seq;
        const reply = new Promise<Record<string, unknown> | undefined>((resolve) => {
          const timer = setTimeout(() => resolve(undefined), UDP_TIMEOUT_MS);
          waiting = { seq: mySeq, resolve: (m) => (clearTimeout(timer), resolve(m)) };
        });
        const t0 = nowUs();
        sock.send(
          JSON.stringify({ action: 'get', rule_name: tag, app_name: app, seq: mySeq }),
          this.s.slots[slot].udpPort,
          '127.0.0.1',
        );
        const msg = await reply;
        const t1 = nowUs();
        waiting = undefined;
        let rec: Rec;
        if (!msg) rec = { ...base, t0, t1, tr: 'UDP_TIMEOUT' };
        else if (msg.code === 0 && typeof msg.data === 'string') rec = this.answer(base, t0, t1, [msg.data], rule);
        else if (typeof msg.code === 'number' && UDP_NAME.has(msg.code) && msg.code !== 0)
          rec = { ...base, t0, t1, err: UDP_NAME.get(msg.code) };
        else rec = { ...base, t0, t1, bad: `UDP reply without a known code: ${JSON.stringify(msg).slice(0, 120)}` };
        this.record(rec);
        await this.pause(rec.s !== undefined || rec.r !== undefined);
      }
    } finally {
      sock.close();
    }
  }
}

async function main(): Promise<void> {
  const settings = JSON.parse(process.env.CHAOS_CLIENT ?? '') as ClientSettings;
  const c = new ClientProcess(settings);
  const stop = () => c.stop();
  process.on('message', (m) => {
    if (m === 'stop') stop();
  });
  process.on('disconnect', stop);
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  const hard = setTimeout(() => process.exit(4), Math.max(0, settings.hardDeadline - Date.now()));
  hard.unref();
  const tick = setInterval(() => process.send?.({ progress: c.progress() }), 1000);
  await c.run();
  clearInterval(tick);
  if (process.connected) process.send?.({ progress: c.progress(), done: true });
  process.disconnect?.();
}

main().catch((err: Error) => {
  console.error(`chaos client failed: ${err.stack ?? err.message}`);
  process.exit(1);
});
