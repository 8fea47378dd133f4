// Which connection to Redis a reply came over. A session is a number that changes each time a
// client's connection closes (a Redis restart, a failover, the supervisor ending it), and is
// never given to two connections: an answer held in memory (service/kept-answers.ts) is good
// only while the connection it was read from is the one still open, since the server on the
// other end of a new connection may have lost what the old one said (a restart without
// persistence, a replica promoted behind). A client that is not ready has no session.
import type { Redis } from 'ioredis';
import { isCluster, type RedisClient } from './connection.js';

let lastSession = 0;

class Sessions {
  current = ++lastSession;

  constructor(client: RedisClient) {
    const renew = () => {
      this.current = ++lastSession;
    };
    client.on('close', renew);
    client.on('end', renew);
    if (isCluster(client)) {
      // A cluster's client is many connections: the loss of any node's is a loss.
      const watch = (node: Redis) => node.on('close', renew);
      for (const node of client.nodes('all')) watch(node);
      client.on('+node', watch);
      client.on('-node', renew);
    }
  }
}

const sessionsOf = new WeakMap<RedisClient, Sessions>();

/** The session of the client's connection now, or undefined while it is not ready. */
export function sessionOf(client: RedisClient): number | undefined {
  let sessions = sessionsOf.get(client);
  if (sessions === undefined) {
    sessions = new Sessions(client);
    sessionsOf.set(client, sessions);
  }
  return client.status === 'ready' ? sessions.current : undefined;
}
