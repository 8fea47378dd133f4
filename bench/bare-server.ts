// The HTTP benchmark's baseline: a bare Fastify route with the same path shape as the ID
// route, answering a constant {"id":"1"}. It runs as its own process (started by
// bench/http.ts) so that it has the same share of the machine as the idmint server under test.
// With BARE_INCR_REDIS=<url> and BARE_INCR_KEY=<key> the route answers {"id":"<n>"} with n from
// one Redis INCR of the key per request instead: the floor of a request that needs a round trip
// to Redis (bench:scale's `incr` case). With BARE_INCR_SHARED=1 as well, the requests that
// arrive in one turn of the event loop share one `INCRBY <their count>` and each gets its own
// number of the range: the floor of a request that shares a Redis round trip with the other
// requests of its process, as idmint's order global does (bench:scale's `shared` case). It sends
// one INCRBY per turn whatever is in flight: no holding, no limit.
// With BARE_TAKE=1 instead (and BARE_INCR_REDIS, BARE_INCR_KEY), the route answers with one
// EVALSHA of idmint's own take (take-2.lua, one ID of a hash in its steady state, set up under
// the key by bench/take-segment.ts) per request: what an `order: global` request costs when it
// shares nothing, with nothing of idmint's process around the take (npm run bench -- --one-client).
// Prints `listening <url>` once it accepts connections; exits on SIGTERM/SIGINT.
import Fastify from 'fastify';
import { serveUntilSignal } from './serve-until-signal.js';
import { Redis } from 'ioredis';
import { Keys } from '../src/store/redis/keys.js';
import { scriptText } from '../src/store/redis/lua.js';
import { steadySegment, takeTokens } from './take-segment.js';

const app = Fastify({ logger: false });
const incrUrl = process.env.BARE_INCR_REDIS;
if (incrUrl) {
  const redis = new Redis(incrUrl);
  const key = process.env.BARE_INCR_KEY ?? 'bare:incr';
  if (process.env.BARE_TAKE === '1') {
    const prefetch = 0.9;
    const { seg, moved, ref } = await steadySegment(redis, new Keys(`${key}:take`), 'http', prefetch);
    const sha = String(await redis.script('LOAD', scriptText('take-2')));
    const token = takeTokens('bare');
    app.get('/v1/id/:tag', async () => {
      const first = await redis.evalsha(sha, 2, seg, moved, 1, token(), prefetch, ref.epoch);
      if (typeof first !== 'number') throw new Error(`take answered ${JSON.stringify(first)}`);
      return { id: String(first) };
    });
  } else if (process.env.BARE_INCR_SHARED === '1') {
    let turn: ((n: number) => void)[] = [];
    const flush = () => {
      const batch = turn;
      turn = [];
      void redis.incrby(key, batch.length).then((last) => {
        let n = last - batch.length;
        for (const answer of batch) answer(++n);
      });
    };
    app.get(
      '/v1/id/:tag',
      () =>
        new Promise<{ id: string }>((resolve) => {
          if (turn.push((n) => resolve({ id: String(n) })) === 1) setImmediate(flush);
        }),
    );
  } else {
    app.get('/v1/id/:tag', async () => ({ id: String(await redis.incr(key)) }));
  }
  app.addHook('onClose', async () => void redis.disconnect());
} else {
  app.get('/v1/id/:tag', async () => ({ id: '1' }));
}

await serveUntilSignal(app);
