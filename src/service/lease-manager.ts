// This process's worker-id leases, one per worker-id width in use. A lease is valid until a
// local deadline (start of the last successful acquire or renewal + TTL − margin): past it the
// process issues nothing, because Redis may already have handed the id to someone else.
// Renewals come from a BullMQ job (src/consumer/lease-worker.ts); acquiring happens on demand.
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';
import { IdmintError } from '../errors.js';
import type { SpacesRepo } from '../store/mysql/spaces-repo.js';
import type { LeaseStore } from '../store/redis/leases.js';

export interface Lease {
  readonly bits: number;
  readonly workerId: number;
  /** Issue strictly after this wall-clock ms. */
  readonly floorMs: number;
  /** Issue only while the local clock is before this. */
  deadlineMs: number;
  /** Changes whenever this process switches worker id (generators reset their state). */
  readonly generation: number;
  /** Highest wall-clock ms an ID was issued at under this lease. */
  issuedMaxMs: number;
  /** The floor without the space's guard: what it drops to if the guard is lifted. */
  readonly unguardedFloorMs: number;
}

export interface LeaseOptions {
  readonly ttlMs: number;
  readonly marginMs: number;
  readonly nodeId: string;
  /** host:port others can reach this process at (shown to operators). */
  readonly addr: string;
}

export interface LeaseEvents {
  acquired: number;
  renewed: number;
  lost: number;
  exhausted: number;
  /** Renewals found late and scheduled again (src/producer/renewal-watchdog.ts). */
  rescheduled: number;
  /** The shared janitor's schedule found stopped and scheduled again here (src/producer/janitor-watchdog.ts). */
  janitor_rescheduled: number;
}

export class LeaseManager {
  private readonly leases = new Map<number, Lease>();
  private readonly pending = new Map<number, Promise<Lease>>();
  private generation = 0;
  readonly events: LeaseEvents = {
    acquired: 0,
    renewed: 0,
    lost: 0,
    exhausted: 0,
    rescheduled: 0,
    janitor_rescheduled: 0,
  };
  private value: string;
  /** Renewals started so far (the renewal watchdog sees them arrive by it). */
  private renewalsStarted = 0;
  /** The renewal running, which a second call joins. */
  private renewing: Promise<void> | undefined;

  constructor(
    private readonly store: LeaseStore,
    private readonly spaces: SpacesRepo,
    private readonly clock: Clock,
    readonly opts: LeaseOptions,
    private readonly log: Logger,
    /** Told when MySQL had lost its record of a space Redis still holds (and got it back). */
    private readonly onSpaceRegression?: (bits: number) => void,
  ) {
    this.value = `${opts.nodeId} ${opts.addr}`;
  }

  /** Sets the address shown to operators; only before the first lease is taken. */
  setAddr(addr: string): void {
    if (this.leases.size > 0 || this.pending.size > 0) return;
    this.value = `${this.opts.nodeId} ${addr}`;
  }

  /** Leases held now (valid or not), for operators. */
  held(): Lease[] {
    return [...this.leases.values()];
  }

  isValid(lease: Lease): boolean {
    return this.clock.now() < lease.deadlineMs;
  }

  /** The lease get() would answer at once, or undefined when it would have to wait or acquire. */
  current(bits: number): Lease | undefined {
    const lease = this.leases.get(bits);
    if (lease === undefined) return undefined;
    const now = this.clock.now();
    if (now >= lease.deadlineMs || (lease.floorMs > lease.unguardedFloorMs && now <= lease.floorMs)) return undefined;
    return lease;
  }

  /** A lease that is valid now, acquired if needed; LEASE_LOST or UNAVAILABLE otherwise. */
  get(bits: number): Promise<Lease> {
    const lease = this.leases.get(bits);
    if (lease && this.clock.now() < lease.deadlineMs) {
      // Waiting out a guard that another process of a new deployment may lift in a moment.
      if (lease.floorMs > lease.unguardedFloorMs && this.clock.now() <= lease.floorMs) return this.recheckGuard(lease);
      return Promise.resolve(lease);
    }
    let acquiring = this.pending.get(bits);
    if (!acquiring) {
      acquiring = this.acquire(bits).finally(() => this.pending.delete(bits));
      this.pending.set(bits, acquiring);
    }
    return acquiring;
  }

  /**
   * Processes that start together on a new space race: the first creates the guard and lifts
   * it once MySQL confirms the space is new; the others saw the guard meanwhile. They look
   * again and, if it was lifted, continue from their unguarded floor (a new generation).
   */
  private async recheckGuard(guarded: Lease): Promise<Lease> {
    const guard = await this.store.guard(guarded.bits).catch(() => undefined);
    if (guard !== 0 || this.leases.get(guarded.bits) !== guarded) return guarded;
    const lease: Lease = {
      ...guarded,
      floorMs: guarded.unguardedFloorMs,
      issuedMaxMs: guarded.unguardedFloorMs,
      generation: ++this.generation,
    };
    this.leases.set(guarded.bits, lease);
    this.log.info({ workerBits: guarded.bits, workerId: guarded.workerId }, 'worker-id space guard lifted (new space)');
    return lease;
  }

  private async acquire(bits: number): Promise<Lease> {
    const prev = this.leases.get(bits);
    const start = this.clock.now();
    let reply;
    try {
      reply = await this.store.acquire(
        bits,
        this.value,
        this.opts.ttlMs,
        prev?.workerId ?? -1,
        start + this.opts.ttlMs,
      );
    } catch (err) {
      throw new IdmintError('LEASE_LOST', `no worker-id lease: Redis is unreachable (${(err as Error).message})`, {
        cause: err,
      });
    }
    if (reply.kind === 'exhausted') {
      this.events.exhausted++;
      this.log.error({ workerBits: bits, size: 2 ** bits }, 'worker-id pool exhausted: every id is leased');
      throw new IdmintError(
        'UNAVAILABLE',
        `the worker-id pool of width ${bits} is exhausted: all ${2 ** bits} ids are leased`,
      );
    }
    let guard = reply.guardMs;
    if (!reply.fresh && guard > this.clock.now()) {
      // Another process just created the space's state; if the space is new it lifts the
      // guard within a few milliseconds (one MySQL insert). Look again briefly before waiting.
      for (let i = 0; i < 5 && guard > this.clock.now(); i++) {
        await new Promise((r) => setTimeout(r, 20 * (i + 1)));
        guard = (await this.store.guard(bits).catch(() => guard)) ?? guard;
      }
    }
    if (reply.fresh) {
      // The space had no state in Redis. Unless MySQL confirms it was never used, Redis lost
      // its data and earlier holders may still be issuing: keep the guard (one TTL).
      const isNew = await this.spaces.markUsed(bits).catch(() => false);
      if (isNew) {
        await this.store.clearGuard(bits).catch(() => undefined);
        guard = 0;
      } else {
        this.log.warn(
          { workerBits: bits, until: new Date(guard).toISOString() },
          'worker-id space state was lost in Redis; waiting out one lease TTL before issuing',
        );
      }
    } else {
      // Redis holds the space, so it was used. MySQL's record of that is what keeps the guard
      // up after a later Redis loss; a MySQL restored from an older backup may have lost it.
      // Off the request path: a MySQL outage must not delay leases.
      void this.recordSpace(bits);
    }
    // Every acquire starts a new generation: even the id this process held before may have
    // been held by another process in between, whose horizon is in last_ms.
    const same = prev !== undefined && prev.workerId === reply.workerId;
    const unguardedFloorMs = Math.max(reply.lastMs, same ? prev.issuedMaxMs : 0);
    const floorMs = Math.max(unguardedFloorMs, guard);
    const lease: Lease = {
      bits,
      workerId: reply.workerId,
      floorMs,
      deadlineMs: start + this.opts.ttlMs - this.opts.marginMs,
      generation: ++this.generation,
      issuedMaxMs: floorMs,
      unguardedFloorMs,
    };
    this.leases.set(bits, lease);
    this.events.acquired++;
    this.log.info(
      { workerBits: bits, workerId: reply.workerId, floor: new Date(floorMs).toISOString(), reacquired: same },
      'worker-id lease acquired',
    );
    return lease;
  }

  /** Records a space Redis holds as used in MySQL; a row that had to be added is a regression. */
  private async recordSpace(bits: number): Promise<void> {
    let added: boolean;
    try {
      added = await this.spaces.markUsed(bits);
    } catch {
      return; // MySQL away: the next acquire records it
    }
    if (!added) return;
    this.onSpaceRegression?.(bits);
    this.log.warn(
      { workerBits: bits },
      'MySQL had no record of a worker-id space Redis holds (restored from a backup or failed over?): recorded again, so a later Redis loss still guards it',
    );
  }

  /** How many renewals have started (scheduled or the watchdog's). */
  renewals(): number {
    return this.renewalsStarted;
  }

  /**
   * Extends every held lease (compare and extend); switches ids whose lease was lost. A call
   * while a renewal runs joins it (the scheduled job and the renewal watchdog may meet).
   */
  renewAll(): Promise<void> {
    this.renewing ??= this.renewEach().finally(() => (this.renewing = undefined));
    return this.renewing;
  }

  private async renewEach(): Promise<void> {
    this.renewalsStarted++;
    await this.store.heartbeat(this.opts.nodeId, this.opts.ttlMs * 2).catch(() => undefined);
    for (const lease of this.leases.values()) {
      const start = this.clock.now();
      let reply;
      try {
        reply = await this.store.renew(
          lease.bits,
          lease.workerId,
          this.value,
          this.opts.ttlMs,
          start + this.opts.ttlMs,
        );
      } catch (err) {
        this.log.warn(
          { workerBits: lease.bits, workerId: lease.workerId, err: (err as Error).message },
          'lease renewal failed; the lease lapses at its deadline',
        );
        continue;
      }
      if (reply === 'extended') {
        lease.deadlineMs = start + this.opts.ttlMs - this.opts.marginMs;
        this.events.renewed++;
        continue;
      }
      this.events.lost++;
      lease.deadlineMs = 0;
      this.log.warn(
        { workerBits: lease.bits, workerId: lease.workerId, why: reply },
        reply === 'taken'
          ? 'worker id is held by another node; switching ids'
          : 'worker-id lease expired; acquiring again',
      );
      await this.get(lease.bits).catch((err: Error) =>
        this.log.error({ workerBits: lease.bits, err: err.message }, 'could not acquire a worker id'),
      );
    }
  }

  /** Gives every lease back (graceful shutdown); the holder has stopped issuing. */
  async releaseAll(): Promise<void> {
    for (const lease of this.leases.values()) {
      const last = Math.max(lease.issuedMaxMs, lease.floorMs);
      lease.deadlineMs = 0;
      const ok = await this.store.release(lease.bits, lease.workerId, this.value, last).catch(() => false);
      this.log.info({ workerBits: lease.bits, workerId: lease.workerId, released: ok }, 'worker-id lease released');
    }
    this.leases.clear();
  }
}
