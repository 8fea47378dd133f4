// Typed access to worker-id leases in Redis (scripts lease-*.lua).
import { scanKeys, type RedisClient } from './connection.js';
import type { Keys } from './keys.js';
import type { Acquired, RenewResult } from './replies.js';
import { Scripts } from './scripts.js';

export type { Acquired, RenewResult } from './replies.js';

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
  private readonly scripts: Scripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
  ) {
    this.scripts = new Scripts(redis);
  }

  /** horizonMs: the latest wall-clock ms the caller may issue at under this lease. */
  acquire(bits: number, value: string, ttlMs: number, preferred: number, horizonMs: number): Promise<Acquired> {
    return this.scripts.leaseAcquire(this.keys.workerSpace(bits), {
      size: 2 ** bits,
      value,
      ttlMs,
      preferred,
      maxProbes: MAX_PROBES,
      horizonMs,
    });
  }

  renew(bits: number, workerId: number, value: string, ttlMs: number, lastMs: number): Promise<RenewResult> {
    return this.scripts.leaseRenew(this.keys.workerSpace(bits), workerId, value, ttlMs, lastMs);
  }

  /** False when the lease was no longer ours (nothing changed). */
  async release(bits: number, workerId: number, value: string, lastMs: number): Promise<boolean> {
    return (await this.scripts.leaseRelease(this.keys.workerSpace(bits), workerId, value, lastMs)) === 'released';
  }

  /** The space's guard (ms), 0 when lifted, undefined when the space has no state. */
  async guard(bits: number): Promise<number | undefined> {
    const stored = await this.redis.get(this.keys.workerSpaceInit(bits));
    return stored === null ? undefined : Number(stored);
  }

  /** Lifts a space's guard once MySQL confirms the space was never used before. */
  async clearGuard(bits: number): Promise<void> {
    await this.redis.set(this.keys.workerSpaceInit(bits), '0', 'XX');
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
    return keys
      .map((k) => this.keys.workerBitsOf(k))
      .filter((n) => n !== undefined)
      .sort((a, b) => a - b);
  }

  /** Live leases of one space. */
  async list(bits: number): Promise<LeaseInfo[]> {
    const keys = await this.scan(this.keys.workerLeasePattern(bits));
    const out: LeaseInfo[] = [];
    for (const key of keys) {
      const id = this.keys.workerIdOf(bits, key);
      const [value, pttl, last] = await Promise.all([
        this.redis.get(key),
        this.redis.pttl(key),
        this.redis.get(this.keys.workerLast(bits, id)),
      ]);
      if (value === null || pttl < 0) continue;
      const [owner, addr = ''] = value.split(' ');
      out.push({ workerId: id, owner, addr, expiresInMs: pttl, lastMs: Number(last ?? 0) });
    }
    return out.sort((a, b) => a.workerId - b.workerId);
  }

  /** Number of live leases of one space (one SCAN, no per-lease reads). */
  async count(bits: number): Promise<number> {
    return (await this.scan(this.keys.workerLeasePattern(bits))).length;
  }
}
