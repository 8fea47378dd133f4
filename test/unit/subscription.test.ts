// keepSubscribed with a stand-in connection: a resubscription that fails while the connection
// is still open is tried again (and the callback runs once it succeeds); one that fails
// because the connection closed is left to the next 'ready'; ioredis's own resubscription is
// turned off.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import { keepSubscribed } from '../../src/store/redis/subscription.js';

class StandIn extends EventEmitter {
  status = 'ready';
  readonly options = { autoResubscribe: true };
  calls = 0;
  /** Outcomes of the next subscribe calls, in order; then every call succeeds. */
  readonly outcomes: Error[] = [];
  subscribe(): Promise<number> {
    this.calls++;
    const err = this.outcomes.shift();
    return err ? Promise.reject(err) : Promise.resolve(1);
  }
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('keepSubscribed (stand-in connection)', () => {
  it('tries a failed resubscription again while the connection is open, then calls back', async () => {
    const sub = new StandIn();
    const warnings: string[] = [];
    let resubscribed = 0;
    let called!: () => void;
    const back = new Promise<void>((resolve) => {
      called = resolve;
    });
    const log = { warn: (fields: { err: string }) => warnings.push(fields.err) };
    await keepSubscribed(
      sub as never,
      'ch',
      () => {
        resubscribed++;
        called();
      },
      log,
      1,
    );
    assert.equal(sub.options.autoResubscribe, false);
    sub.outcomes.push(new Error('LOADING'), new Error('LOADING'));
    // The retry timer is unref'd, as a process's must be: this one keeps the test's loop running.
    const alive = setInterval(() => undefined, 1000);
    sub.emit('ready');
    await back;
    clearInterval(alive);
    assert.equal(sub.calls, 4, 'the first subscription, two failed resubscriptions, one that succeeded');
    assert.deepEqual(warnings, ['LOADING', 'LOADING']);
    assert.equal(resubscribed, 1);
  });

  it('leaves a resubscription that failed because the connection closed to the next ready', async () => {
    const sub = new StandIn();
    const warnings: string[] = [];
    let resubscribed = 0;
    await keepSubscribed(sub as never, 'ch', () => resubscribed++, { warn: () => warnings.push('warned') }, 1);
    sub.outcomes.push(new Error('Connection is closed.'));
    sub.status = 'end';
    sub.emit('ready');
    await turn();
    assert.equal(sub.calls, 2);
    assert.deepEqual(warnings, []);
    assert.equal(resubscribed, 0);
    sub.status = 'ready';
    sub.emit('ready');
    await turn();
    assert.equal(sub.calls, 3);
    assert.equal(resubscribed, 1);
  });
});
