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

/** The statuses grpc-js refuses a request with on its own, as the idmint code they count as. */
const OWN_REFUSALS: ReadonlyMap<status, IdmintError['code']> = new Map([
  [status.RESOURCE_EXHAUSTED, 'INVALID_ARGUMENT'],
]);

/** An interceptor counting grpc-js's own refusals (first, and only, in the server's `interceptors`). */
export function countOwnRefusals(errors: ErrorCounter, log: FailureLog): ServerInterceptor {
  return (_method, call) => {
    const send = call.sendStatus.bind(call);
    call.sendStatus = (callStatus: Parameters<ServerInterceptingCallInterface['sendStatus']>[0]) => {
      const code = callStatus.code === undefined ? undefined : OWN_REFUSALS.get(callStatus.code);
      if (code !== undefined && (callStatus.metadata?.get('idmint-code').length ?? 0) === 0) {
        noteFailure('grpc', new IdmintError(code, callStatus.details), log, errors);
      }
      send(callStatus);
    };
    return new ServerInterceptingCall(call);
  };
}
