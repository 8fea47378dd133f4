// The interceptor that counts grpc-js's own refusals (api/grpc/refusals.ts) sees every status a
// call sends, so it must cost a call next to nothing: it makes no function per call (a bound
// sendStatus and a closure for each call tripled the heap the soak's load promoted to the old
// generation), counts only a refusal without an idmint code, and hands every status on to the
// call's own sendStatus.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Metadata, status, type ServerInterceptingCallInterface, type ServerMethodDefinition } from '@grpc/grpc-js';
import { countOwnRefusals } from '../../src/api/grpc/refusals.js';

type SentStatus = Parameters<ServerInterceptingCallInterface['sendStatus']>[0];

/** A call as grpc-js makes its innermost one: sendStatus on its prototype, recording what it sent. */
class FakeCall {
  readonly sent: SentStatus[] = [];
  sendStatus(s: SentStatus): void {
    this.sent.push(s);
  }
}

const METHOD = {} as ServerMethodDefinition<unknown, unknown>;

function setup() {
  const counted: { transport: string; code: string }[] = [];
  const logged: unknown[] = [];
  const log = { error: (o: unknown) => logged.push(o), warn: (o: unknown) => logged.push(o) };
  const interceptor = countOwnRefusals({ inc: (labels) => counted.push(labels) }, log as never);
  const intercept = (): FakeCall => {
    const call = new FakeCall();
    interceptor(METHOD, call as unknown as ServerInterceptingCallInterface);
    return call;
  };
  return { counted, intercept };
}

describe('countOwnRefusals', () => {
  it('makes no function per call: every call gets the same sendStatus', () => {
    const { intercept } = setup();
    const [a, b] = [intercept(), intercept()];
    assert.ok(Object.hasOwn(a, 'sendStatus'), 'the call is watched');
    assert.equal(a.sendStatus, b.sendStatus);
  });

  it("counts grpc-js's own refusal and hands every status to the call's own sendStatus", () => {
    const { counted, intercept } = setup();
    const call = intercept();
    const refusal = { code: status.RESOURCE_EXHAUSTED, details: 'Received message larger than max' };
    call.sendStatus(refusal);
    assert.deepEqual(counted, [{ transport: 'grpc', code: 'INVALID_ARGUMENT' }]);
    // One of idmint's own (its code in the metadata) and an OK are handed on, not counted here.
    const metadata = new Metadata();
    metadata.set('idmint-code', 'RATE_LIMITED');
    const ours = { code: status.RESOURCE_EXHAUSTED, details: 'rate limited', metadata };
    const ok = { code: status.OK, details: 'OK' };
    call.sendStatus(ours);
    call.sendStatus(ok);
    assert.equal(counted.length, 1);
    assert.deepEqual(call.sent, [refusal, ours, ok]);
  });
});
