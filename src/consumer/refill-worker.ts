// The BullMQ worker that runs refill jobs (their contract: src/jobs/refill.ts): sizes the next
// segment from the consumption rate, allocates it in MySQL (one transaction, logged), and
// installs it into Redis with fencing.
// Delivery is at least once; a job that runs twice allocates a second segment that the
// install fence refuses or that becomes the next one: wasted at worst, never shared.
// The highest value Redis has installed goes with the allocation as a floor: a MySQL that came
// back behind (backup restore, failover to a lagging replica) is raised above it at once
// instead of handing out segments the `stale` fence refuses one by one.
import { Worker, type Job } from 'bullmq';
import { WORKER_RUN_RETRY_MS } from './run-retry.js';
import type { RedisClient } from '../store/redis/connection.js';
import type { Logger } from 'pino';
import { nextStep } from '../core/step.js';
import { REFILL_QUEUE, refillBackoffStrategy, type RefillJobData, type RefillOutcome } from '../jobs/refill.js';
import type { CountersRepo } from '../store/mysql/counters-repo.js';
import type { TagsRepo } from '../store/mysql/tags-repo.js';
import type { SegmentStore } from '../store/redis/segments.js';
import type { Metrics } from '../metrics/metrics.js';

export interface RefillDeps {
  readonly connection: RedisClient;
  readonly prefix: string;
  readonly concurrency: number;
  readonly tags: TagsRepo;
  readonly counters: CountersRepo;
  readonly segments: SegmentStore;
  readonly nodeId: string;
  readonly log: Logger;
  readonly metrics?: Metrics;
}

export async function refill(
  data: RefillJobData,
  deps: Omit<RefillDeps, 'connection' | 'prefix' | 'concurrency'>,
): Promise<RefillOutcome> {
  const scope = data.scope ?? '';
  const tag = await deps.tags.get(data.tag);
  if (!tag || tag.epoch !== data.epoch) return { result: 'tag-gone' };
  // The epoch changes when the tag moves, so under this epoch its state lives on tag.redis.
  const ref = { tag: data.tag, epoch: data.epoch, shard: data.shard, scope, redis: tag.redis };
  const st = await deps.segments.stats(ref);
  // Cheap early exits; the install script enforces the same conditions atomically.
  if (st.gen !== data.gen) return { result: 'reset' };
  if (st.next) return { result: 'next-present' };
  const now = Date.now();
  const step = nextStep({
    takenSince: st.takenAtInstall === undefined ? 0 : st.taken - st.takenAtInstall,
    elapsedMs: st.lastInstallMs === undefined ? 0 : now - st.lastInstallMs,
    currentStep: (await deps.counters.lastStep(data.tag, data.shard, scope)) ?? tag.step,
    minStep: tag.minStep,
    maxStep: tag.maxStep,
    targetSeconds: tag.targetSeconds,
  });
  const alloc = await deps.counters.allocate(data.tag, data.shard, data.epoch, step, deps.nodeId, scope, st.hwm);
  if (alloc.kind === 'stale') return { result: 'tag-gone' };
  const regression = alloc.regression;
  if (regression) {
    deps.metrics?.counterRegressions.inc({ tag: data.tag, kind: scope === '' ? 'segment' : 'rule' });
    deps.log.warn(
      {
        tag: data.tag,
        shard: data.shard,
        scope: scope || undefined,
        epoch: data.epoch,
        mysql: regression.from,
        redis: regression.to,
        behind: regression.to - regression.from,
      },
      'MySQL high-water mark was behind Redis (restored from a backup or failed over?): raised above what Redis installed',
    );
  }
  if (alloc.kind === 'exhausted') {
    await deps.segments.exhaust(ref, data.gen);
    deps.log.warn({ tag: data.tag, shard: data.shard, scope, maxId: alloc.maxId }, 'tag reached max_id_limit');
    return { result: 'exhausted', ...(regression ? { regression } : {}) };
  }
  const [first, last] = alloc.range;
  const result = await deps.segments.install(ref, data.gen, alloc.range, tag.prefetch, now, alloc.limit);
  const fields = {
    tag: data.tag,
    shard: data.shard,
    scope,
    epoch: data.epoch,
    redis: tag.redis,
    first,
    last,
    step,
    installed: result,
    urgent: data.urgent,
  };
  // A refused segment is a gap; refusals in a row mean something lags (see docs/GUARANTEES.md).
  if (result === 'stale')
    deps.log.warn(fields, 'segment allocated but refused: not above the IDs Redis already installed');
  else deps.log.info(fields, 'segment allocated');
  return { result, first, last, step, ...(regression ? { regression } : {}) };
}

export function startRefillWorker(deps: RefillDeps): Worker<RefillJobData, RefillOutcome> {
  const timed = async (job: Job<RefillJobData>): Promise<RefillOutcome> => {
    const end = deps.metrics?.refillDuration.startTimer();
    try {
      const out = await refill(job.data, deps);
      end?.({ result: out.result });
      if (out.first !== undefined && out.last !== undefined) {
        deps.metrics?.segmentSize.observe({ tag: job.data.tag }, out.last - out.first + 1);
        deps.metrics?.allocations.inc({ tag: job.data.tag });
      }
      return out;
    } catch (err) {
      end?.({ result: 'failed' });
      throw err;
    }
  };
  const worker = new Worker<RefillJobData, RefillOutcome>(REFILL_QUEUE, timed, {
    connection: deps.connection,
    prefix: deps.prefix,
    concurrency: deps.concurrency,
    lockDuration: 10000,
    stalledInterval: 5000,
    runRetryDelay: WORKER_RUN_RETRY_MS,
    settings: { backoffStrategy: refillBackoffStrategy },
  });
  worker.on('failed', (job, err) => {
    deps.log.warn(
      { tag: job?.data.tag, attempts: job?.attemptsMade, err: err.message },
      'refill attempt failed; will retry',
    );
  });
  worker.on('error', (err) => deps.log.error({ err: err.message }, 'refill worker error'));
  return worker;
}
