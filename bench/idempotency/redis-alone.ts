// Redis's own time per call of the scripts an idempotency key adds, for `npm run
// bench:idempotency`: INCR, the take and the key scripts as idmint sends them for one ID (of
// order global a new key's call and a replay's, the same script), on a private redis-server
// with nothing else on it (INFO commandstats).
import { Redis } from 'ioredis';
import { encodeIds, fingerprintOf } from '../../src/core/idempotency-key.js';
import { claimCharge } from '../../src/service/idempotency.js';
import type { RedisClient } from '../../src/store/redis/connection.js';
import { Keys } from '../../src/store/redis/keys.js';
import { scriptText } from '../../src/store/redis/lua.js';
import { SegmentStore } from '../../src/store/redis/segments.js';
import { takesArgs } from './floor-calls.js';
import { RedisServer } from '../../tools/redis-server.js';
import { commandStat } from '../../tools/redis-stats.js';
import { medianOrNaN } from '../stats.js';

export type AloneCall = 'incr' | 'take' | 'inKey' | 'claim' | 'record' | 'replay' | 'replayInKey';

/**
 * Redis's own µs per call of INCR, of the take and of the key scripts as idmint sends them for
 * one ID: the take, a new key's one call (the take with the key's lookup and answer), the claim
 * of a new key, the record over that claim, the claim of a kept key (a replay's only call of
 * order node) and the key's call of order global finding a kept key (a replay's there), on a
 * private server: medians of `rounds` windows of `calls` sequential calls.
 */
export async function redisAlone(rounds: number, calls: number): Promise<Record<AloneCall, number>> {
  const server = await RedisServer.start();
  const r = new Redis(server.url, { maxRetriesPerRequest: 1 });
  try {
    const claimSha = String(await r.script('LOAD', scriptText('idem-claim-3')));
    const recordSha = String(await r.script('LOAD', scriptText('idem-record-3')));
    const takeSha = String(await r.script('LOAD', scriptText('take-2')));
    const inKeySha = String(await r.script('LOAD', scriptText('idem-takes-4')));
    // A counter in its steady state, as install-2.lua leaves it with a segment far from its end.
    const keys = new Keys('b');
    const segments = new SegmentStore({ default: r as unknown as RedisClient }, keys);
    const ref = { tag: 't', epoch: 1, shard: 0 };
    const cold = await segments.take(ref, 1, 0.5);
    await segments.install(ref, cold.gen, [1, 1e12], 0.5);
    // As idmint sends them for GET /v1/id of one ID, kept a day, under the bench's bound.
    const fingerprint = fingerprintOf({ count: 1, shape: 'one' });
    const answer = encodeIds(['1000001']);
    const claim = (key: string) =>
      r.evalsha(
        claimSha,
        3,
        `idem:{t}:${key}`,
        'idem-index:{t}',
        'idem-bytes:{t}',
        key,
        fingerprint,
        'owner',
        30_000,
        100_000_000,
        1024 ** 4,
        claimCharge(1, key, fingerprint),
      );
    const record = (key: string) =>
      r.evalsha(
        recordSha,
        3,
        `idem:{t}:${key}`,
        'idem-index:{t}',
        'idem-bytes:{t}',
        key,
        'owner',
        fingerprint,
        answer,
        86_400_000,
      );
    // One request per call, as a lone request's call is (under load a call carries several),
    // with the arguments idmint sends (floor-calls.ts).
    const where = { tag: ref.tag, epoch: ref.epoch };
    const inKey = (key: string) => r.evalsha(inKeySha, 4, ...takesArgs(keys, where, [{ key, owner: 'owner' }]));
    await claim('kept');
    await record('kept');
    await inKey('kept-in-key');
    let claimed = 0;
    let recorded = 0;
    let taken = 0;
    let call = 0;
    const calls_: Record<AloneCall, () => Promise<unknown>> = {
      incr: () => r.incr('incr'),
      take: () => r.evalsha(takeSha, 2, segments.key(ref), keys.moved(ref.tag), 1, `g${call++}`, 0.5, 1),
      inKey: () => inKey(`t${taken++}`),
      claim: () => claim(`k${claimed++}`),
      // Each round's records go over the claims of the same round.
      record: () => record(`k${recorded++}`),
      replay: () => claim('kept'),
      replayInKey: () => inKey('kept-in-key'),
    };
    const kinds = ['incr', 'take', 'inKey', 'claim', 'record', 'replay', 'replayInKey'] as const;
    const out = Object.fromEntries(kinds.map((kind) => [kind, [] as number[]])) as Record<AloneCall, number[]>;
    for (let round = 0; round < rounds; round++)
      for (const kind of kinds) {
        await r.config('RESETSTAT');
        for (let i = 0; i < calls; i++) await calls_[kind]();
        const s = await commandStat(r, kind === 'incr' ? 'incr' : 'evalsha');
        out[kind].push(s.usec / s.calls);
      }
    return {
      incr: medianOrNaN(out.incr),
      take: medianOrNaN(out.take),
      inKey: medianOrNaN(out.inKey),
      claim: medianOrNaN(out.claim),
      record: medianOrNaN(out.record),
      replay: medianOrNaN(out.replay),
      replayInKey: medianOrNaN(out.replayInKey),
    };
  } finally {
    r.disconnect();
    await server.stop();
  }
}
