// The idmint processes of the chaos campaign: M slots, each a child `idmint serve` on fixed
// loopback ports (HTTP and UDP) with TEST_MODE on. A slot's process can be SIGKILLed and
// started again on the same ports; every start is a new instance, with the monotonic times it
// was spawned and found dead, so the checker can tell which instance answered a request.
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { freePort, startTsx, type Child } from '../../tools/child.js';
import { nowUs } from './recorder.js';
import type { ChildRegistry } from './services.js';

export interface Instance {
  readonly slot: number;
  /** 0 for the first process of the slot, then 1, 2, ... */
  readonly n: number;
  readonly nodeId: string;
  /** µs (monotonic) just before spawn, once it listened, once its exit was seen. */
  readonly spawnAt: number;
  listenAt?: number;
  deadAt?: number;
  /** Why it ended: "killed" (by the campaign), "stopped" (at the end), or "exited <code>" on its own. */
  end?: string;
}

interface Slot {
  readonly index: number;
  readonly httpPort: number;
  readonly udpPort: number;
  proc?: Child;
  inst?: Instance;
  up: boolean;
}

export interface PoolOptions {
  readonly root: string;
  readonly outDir: string;
  readonly redisUrl: string;
  readonly mysqlUrl: string;
  readonly adminToken: string;
  readonly runId: string;
  readonly env: Record<string, string>;
}

export class ServerPool {
  readonly instances: Instance[] = [];
  private readonly slots: Slot[] = [];
  private stopping = false;
  /** Exits nobody asked for (a crash is a finding). */
  readonly unexpectedExits: Instance[] = [];

  private constructor(
    private readonly reg: ChildRegistry,
    private readonly o: PoolOptions,
  ) {}

  static async create(reg: ChildRegistry, count: number, o: PoolOptions): Promise<ServerPool> {
    const pool = new ServerPool(reg, o);
    for (let i = 0; i < count; i++)
      pool.slots.push({ index: i, httpPort: await freePort(), udpPort: await freePort(), up: false });
    return pool;
  }

  get size(): number {
    return this.slots.length;
  }

  url(slot: number): string {
    return `http://127.0.0.1:${this.slots[slot].httpPort}`;
  }

  udpPort(slot: number): number {
    return this.slots[slot].udpPort;
  }

  isUp(slot: number): boolean {
    return this.slots[slot].up;
  }

  /** Spawns the slot's next instance and resolves once it listens. */
  async start(slot: number, timeoutMs = 60000): Promise<Instance> {
    const s = this.slots[slot];
    const n = this.instances.filter((i) => i.slot === slot).length;
    const nodeId = `chaos-${this.o.runId}-s${slot}-i${n}`;
    const env = this.reg.env({
      ...this.o.env,
      REDIS_URL: this.o.redisUrl,
      MYSQL_URL: this.o.mysqlUrl,
      REDIS_PREFIX: 'chaos',
      ADMIN_TOKEN: this.o.adminToken,
      NODE_ID: nodeId,
      HOST: '127.0.0.1',
      PORT: String(s.httpPort),
      UDP_PORT: String(s.udpPort),
      GRPC_PORT: '0',
      TEST_MODE: '1',
      LOG_LEVEL: 'info',
    });
    const inst: Instance = { slot, n, nodeId, spawnAt: nowUs() };
    this.instances.push(inst);
    const proc = startTsx(['src/cli.ts', 'serve'], { name: `idmint slot ${slot}`, cwd: this.o.root, env });
    this.reg.add(proc.proc);
    s.proc = proc;
    s.inst = inst;
    const log = createWriteStream(join(this.o.outDir, `server-${slot}-${n}.log`));
    proc.onLine((line) => log.write(`${line}\n`));
    void proc.exited.then((code) => {
      inst.deadAt = nowUs();
      inst.end ??= `exited ${code ?? proc.proc.signalCode}`;
      s.up = false;
      if (s.proc === proc) s.proc = undefined;
      if (inst.end.startsWith('exited') && !this.stopping) this.unexpectedExits.push(inst);
    });
    try {
      await proc.waitForLine((line) => line.includes('"idmint listening"'), timeoutMs);
    } catch {
      await proc.kill();
      throw new Error(
        `idmint slot ${slot} did not listen within ${timeoutMs} ms or exited first (log: server-${slot}-${n}.log)`,
      );
    }
    inst.listenAt = nowUs();
    s.up = true;
    return inst;
  }

  /** SIGKILL; resolves once the process is gone. */
  async kill(slot: number): Promise<Instance | undefined> {
    const s = this.slots[slot];
    const p = s.proc;
    const inst = s.inst;
    if (!p || !inst) return undefined;
    inst.end = 'killed';
    s.up = false;
    await p.kill();
    return inst;
  }

  /** POST a debug route of a slot's process; throws unless 200. */
  async debug(slot: number, path: string, body: unknown): Promise<unknown> {
    const r = await fetch(`${this.url(slot)}/v1/debug/${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.o.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(5000),
    });
    const json = (await r.json()) as unknown;
    if (r.status !== 200) throw new Error(`debug ${path} on slot ${slot}: ${r.status} ${JSON.stringify(json)}`);
    return json;
  }

  /** SIGTERM every process (SIGKILL after graceMs) and wait for them. */
  async stopAll(graceMs = 10000): Promise<void> {
    this.stopping = true;
    await Promise.all(
      this.slots.map(async (s) => {
        const p = s.proc;
        if (!p) return;
        if (s.inst) s.inst.end = 'stopped';
        await p.stop(graceMs);
      }),
    );
  }
}
