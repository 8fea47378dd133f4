// The floor of `npm run bench:idempotency`: a bare Fastify route `GET /v1/id/:tag` that does the
// Redis work idmint does for a plain segment tag of order global and nothing else of idmint's
// process around it (no tag registry, coalescer, service layers or metrics), run as its own
// process on the same core as idmint. What a case costs here bounds what any implementation
// around the same Redis calls can reach on this machine.
//   without an Idempotency-Key   the requests of one event-loop turn share one take-2.lua call
//                                of as many IDs (idmint's coalescer shares its take the same way;
//                                the floor sends one per turn whatever is in flight, as
//                                bench/bare-server.ts's BARE_INCR_SHARED does)
//   with a key                   the keyed requests of one turn share one idem-takes-4.lua call
//                                carrying each of their keys (at most 64, as idmint's
//                                keyed-takes.ts), with the arguments idmint sends (floor-calls.ts):
//                                a new key is taken and kept in it, a kept key gets its answer;
//                                requests under a key already in flight here wait for its answer,
//                                as idmint's requests of one process do (no call of their own)
// Each answer is {"id":"<n>"} as idmint's; a reply idmint would have to act on further (a
// claim, a full tag, another fingerprint) is answered 500, which fails the run.
// Environment: FLOOR_REDIS (url), FLOOR_PREFIX (key prefix), FLOOR_TAG (default idem.global).
// Prints `listening <url>` once it accepts connections; exits on SIGTERM/SIGINT.
import Fastify from 'fastify';
import { serveUntilSignal } from '../serve-until-signal.js';
import { Redis } from 'ioredis';
import { decodeIds } from '../../src/core/idempotency-key.js';
import { decodeClaimsOrTakes, type ClaimOrTakeResult } from '../../src/store/redis/idempotency-replies.js';
import { Keys } from '../../src/store/redis/keys.js';
import { scriptText } from '../../src/store/redis/lua.js';
import { steadySegment, takeTokens } from '../take-segment.js';
import * as calls from './floor-calls.js';

/** Most keyed requests in one call, as idmint's keyed-takes.ts. */
const MOST_PER_CALL = 64;

const url = process.env.FLOOR_REDIS;
if (!url) throw new Error('FLOOR_REDIS is not set');
const redis = new Redis(url);
const keys = new Keys(process.env.FLOOR_PREFIX ?? 'floor');
const where: calls.FloorTag = { tag: process.env.FLOOR_TAG ?? 'idem.global', epoch: 1 };
await steadySegment(redis, keys, where.tag, calls.DEFAULT_PREFETCH);
const takeSha = String(await redis.script('LOAD', scriptText('take-2')));
const takesSha = String(await redis.script('LOAD', scriptText('idem-takes-4')));
const token = takeTokens('floor');
const owner = calls.ownerTokens();

/** The unkeyed requests of this turn, each told its ID or the error. */
let unkeyed: ((id: number | Error) => void)[] = [];
const sendTake = () => {
  const batch = unkeyed;
  unkeyed = [];
  redis
    .evalsha(takeSha, 2, ...calls.takeArgs(keys, where, batch.length, token()))
    .then((first) => {
      if (typeof first !== 'number') throw new Error(`take answered ${JSON.stringify(first)}`);
      return first;
    })
    .then(
      (first) => {
        for (const [i, answer] of batch.entries()) answer(first + i);
      },
      (err: Error) => {
        for (const answer of batch) answer(err);
      },
    );
};
const takeOne = () =>
  new Promise<number>((resolve, reject) => {
    if (unkeyed.push((id) => (typeof id === 'number' ? resolve(id) : reject(id))) === 1) setImmediate(sendTake);
  });

interface Waiting {
  readonly request: calls.FloorRequest;
  readonly done: (reply: ClaimOrTakeResult | Error) => void;
}
/** The keyed requests of this turn. */
let keyed: Waiting[] = [];
const sendTakes = () => {
  const batch = keyed;
  if (batch.length === 0) return;
  keyed = [];
  const requests = batch.map((w) => w.request);
  redis
    .evalsha(takesSha, 4, ...calls.takesArgs(keys, where, requests))
    .then((raw) => decodeClaimsOrTakes(raw, batch.length))
    .then(
      (replies) => {
        for (const [i, w] of batch.entries()) w.done(replies[i]);
      },
      (err: Error) => {
        for (const w of batch) w.done(err);
      },
    );
};
/** What idem-takes-4.lua answers for the key, sent with the other keys of this turn. */
const claimOrTake = (key: string) =>
  new Promise<ClaimOrTakeResult>((resolve, reject) => {
    const done = (reply: ClaimOrTakeResult | Error) => (reply instanceof Error ? reject(reply) : resolve(reply));
    const length = keyed.push({ request: { key, owner: owner() }, done });
    if (length === 1) setImmediate(sendTakes);
    else if (length >= MOST_PER_CALL) sendTakes();
  });

/** The ID of a key's one call: taken and kept now, or the one kept before under the same fingerprint. */
async function keyedId(key: string): Promise<string> {
  const reply = await claimOrTake(key);
  if (reply.kind === 'taken') return String(reply.first);
  if (reply.kind === 'answered' && reply.fingerprint === calls.ONE_ID_FINGERPRINT) return decodeIds(reply.answer)[0];
  throw new Error(`key ${key}: idem-takes-4.lua answered ${JSON.stringify(reply)}, which the floor does not serve`);
}

/** The keys with a call in flight here: later requests under one wait for its answer. */
const running = new Map<string, Promise<string>>();
async function idOfKey(key: string): Promise<string> {
  const first = running.get(key);
  if (first !== undefined) return first;
  const answer = keyedId(key);
  running.set(key, answer);
  try {
    return await answer;
  } finally {
    running.delete(key);
  }
}

const app = Fastify({ logger: false });
app.get('/v1/id/:tag', async (req) => {
  const key = req.headers['idempotency-key'];
  return { id: typeof key === 'string' ? await idOfKey(key) : String(await takeOne()) };
});
app.addHook('onClose', async () => void redis.disconnect());

await serveUntilSignal(app);
