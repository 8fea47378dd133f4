// A loopback TCP proxy that plays the faults of a real network between idmint and a server,
// switchable at run time and per direction:
// - latency: every chunk is held `latencyMs` (+ up to `jitterMs` more, random) before it goes
//   on; chunks of one direction keep their order, as on one TCP connection;
// - stall (loss as TCP shows it): a chunk is held, with probability `stallRate`, for a random
//   time up to `stallMs` (a retransmission after a lost segment), and what follows waits too;
// - blackhole: nothing is forwarded and nothing is sent back, no RST, no FIN: the sockets stay
//   open and silent. Connections that were open during a blackhole stay dead when it clears
//   (the peer is gone); connections opened afterwards work.
// Chunks held when a blackhole starts are dropped.
import { connect, type Socket } from 'node:net';
import { rng } from '../prng.js';
import { LoopbackProxy } from './loopback-proxy.js';

export interface DirectionFaults {
  latencyMs?: number;
  jitterMs?: number;
  stallRate?: number;
  stallMs?: number;
}

/** 'up': client to server; 'down': server to client. */
export type Direction = 'up' | 'down';

interface Pipe {
  readonly from: Socket;
  readonly to: Socket;
  readonly dir: Direction;
  /** Chunks waiting for their time, in order. */
  readonly queue: { at: number; data: Buffer }[];
  timer?: NodeJS.Timeout;
}

interface Pair {
  readonly client: Socket;
  readonly upstream: Socket;
  dead: boolean;
}

export class FaultProxy extends LoopbackProxy {
  private faults: Record<Direction, DirectionFaults> = { up: {}, down: {} };
  private blackholed = false;
  private readonly pairs = new Set<Pair>();
  private readonly rand: () => number;

  private constructor(targetPort: number, targetHost: string, seed: number) {
    super(targetPort, targetHost);
    const r = rng(seed);
    this.rand = () => r.next();
  }

  static start(targetPort: number, opts: { host?: string; seed?: number } = {}): Promise<FaultProxy> {
    return new FaultProxy(targetPort, opts.host ?? '127.0.0.1', opts.seed ?? 1).listen();
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Sets the faults of one direction, or of both (dir omitted); {} clears them. */
  set(faults: DirectionFaults, dir?: Direction): void {
    if (dir === undefined) this.faults = { up: { ...faults }, down: { ...faults } };
    else this.faults[dir] = { ...faults };
  }

  /** Removes latency, jitter and stalls (not a blackhole). */
  clear(): void {
    this.set({});
  }

  /** Every open connection goes silent for good; new ones are accepted and silent too. */
  blackhole(): void {
    this.blackholed = true;
    for (const p of this.pairs) p.dead = true;
  }

  /** New connections work again; the ones that were silenced stay silent. */
  restore(): void {
    this.blackholed = false;
  }

  /** Open connections (dead ones included). */
  get connections(): number {
    return this.pairs.size;
  }

  protected accept(client: Socket): void {
    client.setNoDelay(true);
    this.track(client);
    if (this.blackholed) {
      // Accepted (the handshake completes, as a silent peer's kernel would), then nothing.
      const pair: Pair = { client, upstream: client, dead: true };
      this.pairs.add(pair);
      client.on('data', () => undefined);
      client.once('close', () => this.pairs.delete(pair));
      return;
    }
    const upstream = connect(this.targetPort, this.targetHost);
    upstream.setNoDelay(true);
    this.track(upstream);
    const pair: Pair = { client, upstream, dead: false };
    this.pairs.add(pair);
    upstream.on('error', () => client.destroy());
    // A closed end is passed on only while the pair is alive: a dead peer sends nothing.
    client.once('close', () => {
      this.pairs.delete(pair);
      upstream.destroy();
    });
    upstream.once('close', () => {
      if (!pair.dead) client.destroy();
    });
    this.pipe(pair, { from: client, to: upstream, dir: 'up', queue: [] });
    this.pipe(pair, { from: upstream, to: client, dir: 'down', queue: [] });
  }

  private pipe(pair: Pair, p: Pipe): void {
    p.from.on('data', (data: Buffer) => {
      if (pair.dead) return;
      const f = this.faults[p.dir];
      let delay = (f.latencyMs ?? 0) + (f.jitterMs ? this.rand() * f.jitterMs : 0);
      if (f.stallRate && this.rand() < f.stallRate) delay += this.rand() * (f.stallMs ?? 0);
      if (delay <= 0 && p.queue.length === 0) {
        p.to.write(data);
        return;
      }
      // Order within a direction holds: a chunk never overtakes the one before it.
      const last = p.queue.length ? p.queue[p.queue.length - 1].at : 0;
      p.queue.push({ at: Math.max(Date.now() + delay, last), data });
      this.drain(pair, p);
    });
  }

  private drain(pair: Pair, p: Pipe): void {
    if (p.timer) return;
    const step = () => {
      p.timer = undefined;
      if (pair.dead) {
        p.queue.length = 0;
        return;
      }
      const t = Date.now();
      while (p.queue.length && p.queue[0].at <= t) p.to.write(p.queue.shift()!.data);
      if (p.queue.length) p.timer = setTimeout(step, p.queue[0].at - t);
    };
    p.timer = setTimeout(step, Math.max(0, p.queue[0].at - Date.now()));
  }
}
