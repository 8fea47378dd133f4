// The store side of the debug switches for fault campaigns (src/api/http/routes/debug.ts, test mode
// only): make this process's worker-id leases lapse now, and end Redis connections from inside
// (store/redis/end-connection.ts) for the connection supervisor to open again.
import type { Redis } from 'ioredis';
import { IdmintError } from '../errors.js';
import { isCluster, type RedisClient } from '../store/redis/connection.js';
import { endConnection } from '../store/redis/end-connection.js';
import type { Keys } from '../store/redis/keys.js';
import { DEFAULT_REDIS } from '../store/redis/segments.js';
import type { ConnectionSupervisor } from '../store/redis/supervisor.js';
import type { LeaseManager } from './lease-manager.js';

export interface DebugSwitchesDeps {
  readonly redis: RedisClient;
  readonly keys: Keys;
  readonly leases: LeaseManager;
  readonly connections: ConnectionSupervisor;
  readonly nodeId: string;
}

export interface ExpiredLease {
  readonly bits: number;
  readonly workerId: number;
  /** The lease key was this process's and is deleted (the id is free for any process). */
  readonly keyDeleted: boolean;
}

const CLUSTER_REFUSAL = "not on a Redis Cluster: its node connections are the cluster client's own";

export class DebugSwitches {
  constructor(private readonly deps: DebugSwitchesDeps) {}

  /**
   * The worker-id leases this process holds (of one width, when given) lapse now, as if its
   * renewals had stopped for a TTL: the lease keys are deleted in Redis while they are still
   * this process's, and the local deadlines set to the past.
   */
  async expireLeases(bits?: number): Promise<ExpiredLease[]> {
    const { redis, keys, leases, nodeId } = this.deps;
    const expired: ExpiredLease[] = [];
    for (const lease of leases.held()) {
      if (bits !== undefined && lease.bits !== bits) continue;
      lease.deadlineMs = 0;
      // Deleted only while it is still this process's (the value starts with the node id).
      const key = keys.workerLease(lease.bits, lease.workerId);
      const value = await redis.get(key);
      const ours = value !== null && value.split(' ')[0] === nodeId;
      if (ours) await redis.del(key);
      lease.deadlineMs = 0; // again: a renewal that was in flight may have extended it meanwhile
      expired.push({ bits: lease.bits, workerId: lease.workerId, keyDeleted: ours });
    }
    return expired;
  }

  /**
   * Ends ready connections of this process to the default Redis without closing them: every
   * one of `role` with `all`, else one drawn at random (of `role`, when given). Answers the
   * roles ended.
   */
  async endRedisConnections(role: string | undefined, all: boolean): Promise<string[]> {
    const ofRole = (c: { role: string }) => role === undefined || c.role === role;
    const clients = this.deps.connections.clients(DEFAULT_REDIS);
    const candidates = clients.filter((c) => ofRole(c) && c.client.status === 'ready');
    if (candidates.length === 0) {
      const which = role ? ` of role ${role}` : '';
      throw new IdmintError('INVALID_ARGUMENT', `no ready connection${which} to the default Redis`);
    }
    const chosen = all ? candidates : [candidates[Math.floor(Math.random() * candidates.length)]];
    const ended: Redis[] = [];
    for (const { client } of chosen) {
      if (isCluster(client)) {
        throw new IdmintError('INVALID_ARGUMENT', CLUSTER_REFUSAL);
      }
      ended.push(client);
    }
    await Promise.all(ended.map((client) => endConnection(client)));
    return chosen.map((c) => c.role);
  }
}
