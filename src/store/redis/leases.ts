// Typed access to worker-id leases in Redis (scripts lease-*.lua).
import { scanKeys, type RedisClient } from './connection.js';
import type { Keys } from './keys.js';
import { loadScripts, type ScriptFn } from './scripts.js';

export interface Acquired {
  /** -1 when the space has no free id. */
  readonly workerId: number;
  readonly lastMs: number;
  readonly guardMs: number;
  /** This call created the space's state (first use, or Redis lost its data). */
  readonly fresh: boolean;
}

export type RenewResult = 'extended' | 'expired' | 'taken';

export interface LeaseInfo {
  readonly workerId: number;
  readonly owner: string;
  readonly addr: string;
  readonly expiresInMs: number;
  readonly lastMs: number;
}

/** Most ids one acquire call probes; a nearly full large space answers "exhausted" sooner. */
export const MAX_PROBES = 4096;

export class LeaseStore {
  private readonly scripts: Record<string, ScriptFn>;

  constructor(private readonly redis: RedisClient, private readonly keys: Keys) {
    this.scripts = loadScripts(redis);
  }

  /** horizonMs: the latest wall-clock ms the caller may issue at under this lease. */
  async acquire(bits: number, value: string, ttlMs: number, preferred: number, horizonMs: number): Promise<Acquired> {
    const r = (await this.scripts['lease-acquire']([this.keys.workerSpace(bits)], [2 ** bits, value, ttlMs, preferred, MAX_PROBES, horizonMs])) as number[];
    return { workerId: Number(r[0]), lastMs: Number(r[1]), guardMs: Number(r[2]), fresh: Number(r[3]) === 1 };
  }

  async renew(bits: number, workerId: number, value: string, ttlMs: number, lastMs: number): Promise<RenewResult> {
    const r = Number(await this.scripts['lease-renew']([this.keys.workerSpace(bits)], [workerId, value, ttlMs, lastMs]));
    return r === 1 ? 'extended' : r === 0 ? 'expired' : 'taken';
  }

  async release(bits: number, workerId: number, value: string, lastMs: number): Promise<boolean> {
    return Number(await this.scripts['lease-release']([this.keys.workerSpace(bits)], [workerId, value, lastMs])) === 1;
  }

  /** The space's guard (ms), 0 when lifted, undefined when the space has no state. */
  async guard(bits: number): Promise<number | undefined> {
    const v = await this.redis.get(`${this.keys.workerSpace(bits)}init`);
    return v === null ? undefined : Number(v);
  }

  /** Lifts a space's guard once MySQL confirms the space was never used before. */
  async clearGuard(bits: number): Promise<void> {
    await this.redis.set(`${this.keys.workerSpace(bits)}init`, '0', 'XX');
  }

  async heartbeat(nodeId: string, ttlMs: number): Promise<void> {
    await this.redis.set(this.keys.nodeHeartbeat(nodeId), '1', 'PX', ttlMs);
  }

  async isAlive(nodeId: string): Promise<boolean> {
    return (await this.redis.exists(this.keys.nodeHeartbeat(nodeId))) === 1;
  }

  private async scan(pattern: string): Promise<string[]> {
    const out: string[] = [];
    await scanKeys(this.redis, pattern, async (keys) => out.push(...keys));
    return out;
  }

  /** Worker-id widths that have state in Redis. */
  async spaces(): Promise<number[]> {
    const keys = await this.scan(this.keys.workerSpaceInitPattern());
    return keys.map((k) => Number(/\{ws(\d+)\}/.exec(k)?.[1])).filter((n) => Number.isInteger(n)).sort((a, b) => a - b);
  }

  /** Live leases of one space. */
  async list(bits: number): Promise<LeaseInfo[]> {
    const base = this.keys.workerSpace(bits);
    const keys = await this.scan(`${base.replace(/[*?[\]]/g, '\\$&')}w:*`);
    const out: LeaseInfo[] = [];
    for (const key of keys) {
      const id = Number(key.slice(base.length + 2));
      const [value, pttl, last] = await Promise.all([this.redis.get(key), this.redis.pttl(key), this.redis.get(`${base}last:${id}`)]);
      if (value === null || pttl < 0) continue;
      const [owner, addr = ''] = value.split(' ');
      out.push({ workerId: id, owner, addr, expiresInMs: pttl, lastMs: Number(last ?? 0) });
    }
    return out.sort((a, b) => a.workerId - b.workerId);
  }

  /** Number of live leases of one space (one SCAN, no per-lease reads). */
  async count(bits: number): Promise<number> {
    const base = this.keys.workerSpace(bits);
    return (await this.scan(`${base.replace(/[*?[\]]/g, '\\$&')}w:*`)).length;
  }
}
