// lateTimeout and withinLate: a timeout that is due when this thread wakes from a stall lets
// the sockets be read once before it acts, so a reply that arrived during the stall wins; a
// reply that never comes still times out.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { lateTimeout, withinLate } from '../../src/late-timeout.js';

function block(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy: no timer runs, no socket is read
  }
}

describe('late timeouts', () => {
  const server = createServer((s) => s.on('data', (b) => (b.toString() === 'ping' ? s.write('pong') : undefined)));
  let client: Socket;

  before(async () => {
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    client = connect((server.address() as AddressInfo).port, '127.0.0.1');
    await once(client, 'connect');
  });
  after(() => {
    client.destroy();
    server.close();
  });

  const reply = () => once(client, 'data').then(([b]) => (b as Buffer).toString());

  it('a reply that arrived while the thread was stalled settles before the timeout acts', async () => {
    for (let i = 0; i < 5; i++) {
      const answer = reply();
      client.write('ping');
      block(150);
      assert.equal(await withinLate(answer, 50, () => new Error('late')), 'pong');
    }
  });

  it('a plain timeout in the same place would have fired first', async () => {
    const answer = reply();
    client.write('ping');
    let timer: NodeJS.Timeout | undefined;
    const plain = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('late')), 50)));
    block(150);
    await assert.rejects(Promise.race([answer, plain]), /late/);
    clearTimeout(timer);
    await answer;
  });

  it('no reply still times out, after one more turn of the loop', async () => {
    const t0 = performance.now();
    await assert.rejects(
      withinLate(new Promise(() => undefined), 30, () => new Error('no answer')),
      /no answer/,
    );
    assert.ok(performance.now() - t0 >= 29);
  });

  it('clearTimeout cancels a late timeout that is not due yet', async () => {
    let fired = false;
    const t = lateTimeout(() => (fired = true), 20);
    clearTimeout(t);
    await sleep(60);
    assert.equal(fired, false);
  });
});
