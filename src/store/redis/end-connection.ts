// A fault for test mode (the debug routes, the chaos campaign): ends a Redis connection from
// idmint's side the way ioredis's failover detector can, so that the connection supervisor
// (supervisor.ts) has something real to heal. The connection's socket is dropped; at its next
// reconnect, while its connector is connecting (a Sentinel-managed one: asking the sentinels
// for the master), the connector is disconnected, as the detector does on +switch-master.
// ioredis then leaves the connection in `end`, its final state, without idmint having closed it.
import type { Redis } from 'ioredis';

interface Internals {
  readonly connector: { disconnect(): void };
  readonly stream?: { destroy(): void };
}

/** Ends `connection` as described above; resolves once it is in `end`, rejects after timeoutMs. */
export function endConnection(connection: Redis, timeoutMs = 10000): Promise<void> {
  const inner = connection as unknown as Internals;
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`the connection did not end within ${timeoutMs} ms (status ${connection.status})`));
    }, timeoutMs);
    // 'connecting' is emitted on the next tick after the connector started: before a
    // standalone connector opens its socket, while a Sentinel one waits on its first sentinel.
    const onConnecting = () => inner.connector.disconnect();
    const onEnd = () => {
      cleanup();
      resolve();
    };
    const cleanup = () => {
      clearTimeout(timer);
      connection.off('connecting', onConnecting);
      connection.off('end', onEnd);
    };
    connection.once('connecting', onConnecting);
    connection.once('end', onEnd);
    inner.stream?.destroy();
  });
}
