// Refusals grpc-js answers itself, before any handler of ours runs, counted in
// idmint_errors_total{transport="grpc"} as every other refusal: a request over the server's
// grpc.max_receive_message_length (RESOURCE_EXHAUSTED, "Received message larger than max").
// grpc-js offers no hook for them: it sends that status from its innermost call object
// (BaseServerInterceptingCall.sendStatus) without passing it through the interceptors' chain.
// The interceptor below is the innermost one (the server has no other), so it is handed that
// object and watches what it sends; every status our handlers send carries the idmint code in
// its metadata (grpc/status.ts), so a failed status without one is grpc-js's own.
import {
  ServerInterceptingCall,
  status,
  type ServerInterceptingCallInterface,
  type ServerInterceptor,
} from '@grpc/grpc-js';
import { IdmintError } from '../../errors.js';
import { noteFailure, type ErrorCounter, type FailureLog } from '../error-policy.js';

type SentStatus = Parameters<ServerInterceptingCallInterface['sendStatus']>[0];

/** The statuses grpc-js refuses a request with on its own, as the idmint code they count as. */
const OWN_REFUSALS: ReadonlyMap<status, IdmintError['code']> = new Map([
  [status.RESOURCE_EXHAUSTED, 'INVALID_ARGUMENT'],
]);

/**
 * An interceptor counting grpc-js's own refusals (first, and only, in the server's `interceptors`).
 * It makes no function per call: each call's sendStatus is set to one function of this server's,
 * which calls the call's own (its prototype's) after looking at the status. A function made for
 * each call (sendStatus bound to the call, and a closure around it) more than tripled the heap
 * the soak's load promoted to the old generation (npm run soak: the heap grew about 3.7 MB a
 * second between full collections instead of 1, and RSS swung by a fifth with them).
 */
export function countOwnRefusals(errors: ErrorCounter, log: FailureLog): ServerInterceptor {
  function sendStatusCounted(this: ServerInterceptingCallInterface, callStatus: SentStatus): void {
    const code = callStatus.code === undefined ? undefined : OWN_REFUSALS.get(callStatus.code);
    if (code !== undefined && (callStatus.metadata?.get('idmint-code').length ?? 0) === 0) {
      noteFailure('grpc', new IdmintError(code, callStatus.details), log, errors);
    }
    (Object.getPrototypeOf(this) as ServerInterceptingCallInterface).sendStatus.call(this, callStatus);
  }
  return (_method, call) => {
    call.sendStatus = sendStatusCounted;
    return new ServerInterceptingCall(call);
  };
}
