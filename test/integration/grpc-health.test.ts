// suite: single — MySQL cut off through a proxy
// The standard gRPC health service (grpc.health.v1.Health) and server reflection on the gRPC
// listener, through standard clients: health follows readiness (SERVING, NOT_SERVING while MySQL is
// unreachable, SERVING again), for the server ("") and idmint.v1.Ids, on Check and on Watch; a
// drain turns it NOT_SERVING at once (and /readyz 503, idmint_ready 0) while IDs are still served,
// and closing ends the Watch streams. Reflection (v1 and v1alpha) lists the services and hands out
// the descriptor of idmint.v1.Ids, enough to call it without the proto file.
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { after, before, describe, it } from 'node:test';
import { credentials, loadPackageDefinition, status, type Client, type ServiceError } from '@grpc/grpc-js';
import { cleanup, mysqlUrlFor, testNames } from '../../tools/env.js';
import { freePort } from '../../tools/child.js';
import { createTag, fetchIds, startLocalNode } from '../../tools/node.js';
import { TcpProxy } from '../../tools/proxies/tcp-proxy.js';
import { IdsClient } from '../../tools/grpc-client.js';
import { readyz } from '../helpers/answers.js';
import { HealthClient, ReflectionClient } from '../helpers/grpc-health-client.js';
import { GRPC_CLOSE_GRACE_MS } from '../../src/api/grpc/grpc-server.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;
const DRAIN_MS = 5000;

const verdict = ({ code, status }: { code: number; status: string }) => ({ code, status });

describe('gRPC health service', () => {
  const names = testNames();
  let proxy: TcpProxy;
  let node: LocalNode | undefined;
  let health: HealthClient;
  let ids: IdsClient;

  before(async () => {
    proxy = await TcpProxy.start(3306);
    node = await startLocalNode(names, {
      GRPC_PORT: String(await freePort()),
      MYSQL_URL: mysqlUrlFor(names.db, `mysql://root@127.0.0.1:${proxy.port}/x`),
      SHUTDOWN_DRAIN_MS: String(DRAIN_MS),
      LOG_LEVEL: 'error',
    });
    health = new HealthClient(node.grpcPort!);
    ids = new IdsClient(node.grpcPort!);
    await createTag(node.url, { tag: 'h', step: 1000, min_step: 100 });
  });
  after(async () => {
    health?.close();
    ids?.close();
    await node?.close();
    await proxy?.close();
    await cleanup(names);
  });

  it('answers SERVING for the server and idmint.v1.Ids when ready, NOT_FOUND for other names', async () => {
    assert.equal((await readyz(node!.url)).code, 200);
    assert.match(await (await fetch(`${node!.url}/metrics`)).text(), /^idmint_ready 1$/m);
    assert.equal(await health.check(''), 'SERVING');
    assert.equal(await health.check('idmint.v1.Ids'), 'SERVING');
    await assert.rejects(health.check('no.such.Service'), (err: ServiceError) => err.code === status.NOT_FOUND);
  });

  it('follows readiness: NOT_SERVING while MySQL is unreachable, on Check and Watch, SERVING again after', async () => {
    const all = health.watch('');
    const svc = health.watch('idmint.v1.Ids');
    try {
      await all.until('SERVING');
      await svc.until('SERVING');
      proxy.block();
      const down = await all.until('NOT_SERVING', 1);
      await svc.until('NOT_SERVING', 1);
      assert.equal(await health.check(''), 'NOT_SERVING');
      assert.equal(await health.check('idmint.v1.Ids'), 'NOT_SERVING');
      // The same verdict as /readyz.
      assert.deepEqual(verdict(await readyz(node!.url)), { code: 503, status: 'not ready' });
      proxy.unblock();
      await all.until('SERVING', down + 1);
      await svc.until('SERVING', down + 1);
      assert.equal(await health.check(''), 'SERVING');
      // Only changes are streamed: no repeats of the same status in a row.
      assert.ok(
        all.seen.every((s, i) => i === 0 || s !== all.seen[i - 1]),
        all.seen.join(', '),
      );
    } finally {
      proxy.unblock();
      all.cancel();
      svc.cancel();
    }
  });

  it('turns NOT_SERVING at once on a drain while IDs are still served; closing ends the Watch streams', async () => {
    const watch = health.watch('');
    await watch.until('SERVING');
    const t0 = performance.now();
    const drained = node!.drain();
    const at = await watch.until('NOT_SERVING');
    assert.ok(performance.now() - t0 < DRAIN_MS, 'NOT_SERVING came within the drain');
    assert.equal(await health.check('idmint.v1.Ids'), 'NOT_SERVING');
    assert.deepEqual(verdict(await readyz(node!.url)), { code: 503, status: 'draining' });
    assert.match(await (await fetch(`${node!.url}/metrics`)).text(), /^idmint_ready 0$/m);
    // Still serving every transport.
    assert.equal((await ids.next({ tag: 'h', count: 3 })).length, 3);
    assert.equal((await fetchIds(node!.url, 'h', 2)).length, 2);
    assert.ok(performance.now() - t0 < DRAIN_MS, 'the checks above ran within the drain');
    await drained;
    assert.ok(performance.now() - t0 >= DRAIN_MS - 5, 'drain() resolves after SHUTDOWN_DRAIN_MS');
    assert.deepEqual(watch.seen.slice(at), ['NOT_SERVING'], 'NOT_SERVING stayed');
    const c0 = performance.now();
    await node!.close();
    node = undefined;
    assert.equal(await watch.ended, 'ended');
    assert.ok(
      performance.now() - c0 < GRPC_CLOSE_GRACE_MS,
      'an open Watch stream does not hold the close to its grace period',
    );
  });
});

describe('gRPC server reflection', () => {
  const names = testNames();
  let node: LocalNode;

  before(async () => {
    node = await startLocalNode(names, { GRPC_PORT: String(await freePort()) });
    await createTag(node.url, { tag: 'r', step: 1000, min_step: 100 });
  });
  after(async () => {
    await node?.close();
    await cleanup(names);
  });

  for (const version of ['v1', 'v1alpha'] as const) {
    it(`lists idmint.v1.Ids and the health service (${version})`, async () => {
      const refl = new ReflectionClient(node.grpcPort!, version);
      try {
        const services = await refl.listServices();
        assert.ok(services.includes('idmint.v1.Ids'), services.join(', '));
        assert.ok(services.includes('grpc.health.v1.Health'), services.join(', '));
      } finally {
        refl.close();
      }
    });
  }

  it('hands out the descriptor of idmint.v1.Ids, from which a client calls it without the proto file', async () => {
    const refl = new ReflectionClient(node.grpcPort!);
    let stub:
      | (Client & { Next: (req: object, cb: (err: ServiceError | null, res: { ids: string[] }) => void) => void })
      | undefined;
    try {
      const def = await refl.fileContainingSymbol('idmint.v1.Ids');
      assert.ok(def['idmint.v1.Ids'], `services described: ${Object.keys(def).join(', ')}`);
      const methods = Object.keys(def['idmint.v1.Ids'] as object);
      for (const m of ['Next', 'Take', 'Decode']) assert.ok(methods.includes(m), methods.join(', '));
      const pkg = loadPackageDefinition(def) as unknown as {
        idmint: { v1: { Ids: new (a: string, c: ReturnType<typeof credentials.createInsecure>) => typeof stub } };
      };
      stub = new pkg.idmint.v1.Ids(`127.0.0.1:${node.grpcPort}`, credentials.createInsecure());
      const got = await new Promise<string[]>((resolve, reject) =>
        stub!.Next({ tag: 'r', count: 5 }, (err, res) => (err ? reject(err) : resolve(res.ids))),
      );
      assert.equal(got.length, 5);
      assert.equal(new Set(got).size, 5);
    } finally {
      stub?.close();
      refl.close();
    }
  });
});
