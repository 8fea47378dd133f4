// Snowflake IDs of one tag in this process: time from the injectable clock, the worker id of
// this process's lease for the layout's width, and a sequence within the tick. Never issues at
// or before the lease's floor, never past the lease's deadline, never backwards.
import { nextTick, type Clock, type SequenceState } from '../core/clock.js';
import { encode, maxSeq, toUnits, unitMs, type SnowflakeLayout } from '../core/snowflake-layout.js';
import { IdmintError } from '../errors.js';
import type { Lease, LeaseManager } from './lease-manager.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface ClockEvents {
  backwards: number;
  waits: number;
}

export class SnowflakeGenerator {
  private state: SequenceState = { lastTime: -1, lastSeq: 0 };
  private leaseGeneration = -1;
  /** An ID was issued under the current lease generation (else lastTime is the lease floor). */
  private issuedUnderLease = false;
  private readonly maxSeq: number;
  private readonly unit: number;

  constructor(
    private readonly layout: SnowflakeLayout,
    private readonly leases: LeaseManager,
    private readonly clock: Clock,
    private readonly maxBackMs: number,
    readonly events: ClockEvents = { backwards: 0, waits: 0 },
  ) {
    this.maxSeq = maxSeq(layout);
    this.unit = unitMs(layout.unit);
  }

  /**
   * One ID now, synchronously, or undefined whenever take() has something to decide (no lease
   * at hand, a new lease generation, a tick to wait for, the clock behind or out of range).
   */
  takeOneNow(): bigint | undefined {
    const lease = this.leases.current(this.layout.workerBits);
    if (lease === undefined || lease.generation !== this.leaseGeneration) return undefined;
    const now = this.clock.now();
    if (now >= lease.deadlineMs) return undefined;
    const units = toUnits(this.layout, now);
    if (units < 0 || units >= 2 ** this.layout.timeBits) return undefined;
    const tick = nextTick(this.state, units, this.maxSeq, Number.POSITIVE_INFINITY);
    if (tick.kind !== 'issue') return undefined;
    this.state.lastTime = tick.time;
    this.state.lastSeq = tick.seq;
    this.issuedUnderLease = true;
    if (now > lease.issuedMaxMs) lease.issuedMaxMs = now;
    return encode(this.layout, tick.time, lease.workerId, tick.seq);
  }

  /**
   * Takes up the lease this process holds now for the layout's width, if any and not taken up
   * yet, as take() would before its first ID: takeOneNow can then issue the first ID at once.
   */
  prime(): void {
    const lease = this.leases.current(this.layout.workerBits);
    if (lease !== undefined && lease.generation !== this.leaseGeneration) this.adopt(lease);
  }

  /** Issuing continues under a new lease generation, from its floor. */
  private adopt(lease: Lease): void {
    this.leaseGeneration = lease.generation;
    this.state = { lastTime: toUnits(this.layout, lease.floorMs), lastSeq: this.maxSeq };
    this.issuedUnderLease = false;
  }

  /** `count` IDs, ascending. */
  async take(count: number): Promise<bigint[]> {
    const out: bigint[] = [];
    while (out.length < count) {
      const lease = await this.leases.get(this.layout.workerBits);
      if (lease.generation !== this.leaseGeneration) this.adopt(lease);
      // Issue synchronously while the lease holds and the clock allows.
      for (;;) {
        const now = this.clock.now();
        if (now >= lease.deadlineMs) break; // lease may have lapsed: get() re-checks
        const units = toUnits(this.layout, now);
        if (units >= 2 ** this.layout.timeBits) {
          throw new IdmintError(
            'ID_SPACE_EXHAUSTED',
            `the layout's time range ended at ${new Date(this.layout.epochMs + 2 ** this.layout.timeBits * this.unit).toISOString()}`,
          );
        }
        if (units < 0) throw new IdmintError('CLOCK_BACKWARDS', 'the clock reads a time before the layout epoch');
        const tick = nextTick(this.state, units, this.maxSeq, Number.POSITIVE_INFINITY);
        if (tick.kind === 'issue') {
          this.state.lastTime = tick.time;
          this.state.lastSeq = tick.seq;
          this.issuedUnderLease = true;
          if (now > lease.issuedMaxMs) lease.issuedMaxMs = now;
          out.push(encode(this.layout, tick.time, lease.workerId, tick.seq));
          if (out.length === count) return out;
          continue;
        }
        if (tick.kind === 'backwards') throw new Error('unreachable: unbounded wait');
        const waitMs = this.layout.epochMs + tick.time * this.unit - now;
        if (units < this.state.lastTime && waitMs > this.maxBackMs) {
          if (!this.issuedUnderLease) {
            throw new IdmintError(
              'UNAVAILABLE',
              `worker id ${lease.workerId} may be used only after ${new Date(lease.floorMs).toISOString()} (an earlier holder's horizon)`,
              {
                retryAfter: Math.max(1, Math.ceil(waitMs / 1000)),
              },
            );
          }
          this.events.backwards++;
          throw new IdmintError(
            'CLOCK_BACKWARDS',
            `the clock is ${waitMs} ms behind the last issued time (tolerated: ${this.maxBackMs} ms)`,
            {
              retryAfter: Math.max(1, Math.ceil(waitMs / 1000)),
            },
          );
        }
        this.events.waits++;
        // The next millisecond is less than one timer tick away: spin for it, as snowflake
        // generators do (a timer would sleep 1 ms or more and cap the rate well below the
        // layout's). Longer waits (clock steps, second-based layouts) sleep.
        if (waitMs <= 1) {
          const until = performance.now() + 2; // bounded: an injected clock may not move at all
          while (this.clock.now() < now + waitMs && performance.now() < until) {
            /* spin until the tick */
          }
          if (this.clock.now() < now + waitMs) await sleep(1);
        } else {
          await sleep(waitMs);
        }
        break; // re-check the lease after waiting
      }
    }
    return out;
  }
}
