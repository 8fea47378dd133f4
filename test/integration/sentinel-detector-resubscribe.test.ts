// suite: single — starts its own Sentinel group
// A failover detector's subscription, made again after its sentinel connection dropped, ended
// by the connection it serves closing before the sentinel answered it. ioredis sends that
// SUBSCRIBE with nobody to hear how it ends: the close rejects it with "Connection is closed."
// and the rejection is unhandled, which ends a process. Held open for certain here: the node
// knows the group through a proxy in front of one sentinel; the sentinel drops the detector's
// connections, and the proxy answers the handshake of the connection made again (HELLO) but
// keeps back what follows, so its SUBSCRIBE waits; then the connection the detector serves is
// closed. failover-detector.ts makes the detector's connections subscribe again themselves and
// hear the failure (fails with ioredis's own resubscription).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { createSentinelRedis, whenReady } from '../../src/store/redis/connection.js';
import { detectorResubscriptions } from '../../src/store/redis/failover-detector.js';
import { ReplyHoldProxy } from '../../tools/proxies/reply-hold-proxy.js';
import { withRedisPort } from '../../tools/redis-server.js';
import { waitFor } from '../helpers/fault-load.js';
import { sentinelScript } from '../helpers/sentinel-group.js';

const BASE = Number(process.env.DETECTOR_SENTINEL_BASE_PORT ?? 7541);
const script = sentinelScript(BASE);

/** The sentinel connection on `port` of the failover detector `redis` set up last. */
const detectorOn = (redis: Redis, port: number): Redis | undefined =>
  (
    redis as unknown as {
      connector: { failoverDetector: { sentinels: { address: { port?: number }; client: Redis }[] } | null };
    }
  ).connector.failoverDetector?.sentinels.find((s) => s.address.port === port)?.client;

describe('a failover detector subscribing again when the connection it serves closes', () => {
  let sentinel = 0;
  let proxy: ReplyHoldProxy | undefined;
  let redis: Redis | undefined;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);

  before(async () => {
    const seeds = script('start').split('\n').pop()!;
    sentinel = Number(seeds.split(',')[0].split(':')[1]);
    proxy = await ReplyHoldProxy.start(sentinel);
    process.on('unhandledRejection', onUnhandled);
  });

  after(async () => {
    redis?.disconnect();
    await proxy?.close();
    process.off('unhandledRejection', onUnhandled);
    script('stop');
  });

  it('hears the SUBSCRIBE rejected, and leaves no rejection unhandled', { timeout: 60000 }, async () => {
    const through = proxy!;
    const target = { sentinels: [{ host: '127.0.0.1', port: through.port }], master: 'idmint', db: 0 };
    const c = (redis = createSentinelRedis(target, '', 'worker'));
    c.on('error', () => undefined);
    await whenReady(c);
    await waitFor(
      'the detector subscribed through the proxy',
      () => detectorOn(c, through.port)?.status === 'ready',
      10000,
    );
    const detector = detectorOn(c, through.port)!;
    const failedBefore = detectorResubscriptions.failed;
    let reconnected = false;
    detector.once('reconnecting', () => {
      reconnected = true;
    });
    // Connections made from now on get their handshake's reply (HELLO) and nothing after it.
    through.holdNew(1);
    await withRedisPort(sentinel, (s) => s.call('CLIENT', 'KILL', 'TYPE', 'pubsub'));
    await waitFor('the detector connected again', () => reconnected && detector.status === 'ready', 15000);
    await waitFor('its SUBSCRIBE sent and held', () => through.heldChunks > 0 || unhandled.length > 0, 15000);
    c.disconnect();
    await waitFor(
      'the SUBSCRIBE in flight to be rejected',
      () => detectorResubscriptions.failed > failedBefore || unhandled.length > 0,
      15000,
    );
    assert.deepEqual(
      unhandled.map((r) => (r as Error).message),
      [],
      'no rejection of the detector left unhandled',
    );
  });
});
