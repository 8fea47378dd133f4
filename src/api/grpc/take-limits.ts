// How many Take calls one client address may run at once: GRPC_MAX_TAKES_PER_PEER (as the
// websocket stream caps sockets per client); more are refused LIMIT_EXCEEDED (gRPC
// RESOURCE_EXHAUSTED) with a retry hint, before anything is taken.
import { IdmintError } from '../../errors.js';

/** Running Take calls per peer address. */
export class PeerTakes {
  private readonly running = new Map<string, number>();

  constructor(private readonly maxPerPeer: number) {}

  /** Counts a call of `peer` in, or throws LIMIT_EXCEEDED when it has maxPerPeer running. */
  enter(peer: string): void {
    const count = this.running.get(peer) ?? 0;
    if (count >= this.maxPerPeer) {
      throw new IdmintError(
        'LIMIT_EXCEEDED',
        `at most ${this.maxPerPeer} Take calls may run at once per client address; wait for one to end`,
        {
          retryAfter: 1,
        },
      );
    }
    this.running.set(peer, count + 1);
  }

  leave(peer: string): void {
    const count = (this.running.get(peer) ?? 1) - 1;
    if (count <= 0) this.running.delete(peer);
    else this.running.set(peer, count);
  }
}

/** The address of a grpc-js peer string (`ipv4:1.2.3.4:5678`, `ipv6:[::1]:5678`), without its port. */
export function peerAddress(peer: string): string {
  const rest = peer.replace(/^ipv[46]:/, '');
  const bracket = /^\[([^\]]*)\]/.exec(rest);
  if (bracket) return bracket[1];
  const colon = rest.lastIndexOf(':');
  return colon > 0 ? rest.slice(0, colon) : rest;
}
