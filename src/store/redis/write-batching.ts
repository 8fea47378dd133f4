// The request path's commands to one server leave in one write per turn of the event loop
// instead of one write each. A take is one small command, and on a loopback or LAN socket the
// write that sends it costs more than the command (the system call runs the TCP stack of both
// ends): at thousands of requests a second the process spent more in those writes than in
// anything of its own. Datagrams and HTTP requests read in one poll phase each send their
// command in their own callback; here the first command of a turn corks the connection's
// socket, and the socket is uncorked in that turn's setImmediate phase (after the poll phase
// that read them), so the commands of every request read together go out in one writev, and
// Redis reads them in one read and answers them in one write.
//
// Nothing waits longer than the rest of its turn: setImmediate runs before the loop blocks
// again (libuv does not block its poll while an immediate is pending). A command's deadline
// (command-deadlines.ts) counts from its write, so a pause of the process between the making
// of a command and its write is not the server's silence. Replies and their order
// are ioredis's, unchanged; a socket closed while corked loses what it held as it loses what
// the kernel had not sent, and ioredis fails or resends those commands as it does then.
import type { Socket } from 'node:net';
import type { Command, Redis } from 'ioredis';
import type { CommandDeadlines, CommandHost } from './command-deadlines.js';

/** Writes this module sent in this process: uncorks that flushed at least one command (tests read it). */
export const batchedWrites = { flushes: 0 };

/**
 * Sends the commands `redis` is given in one turn of the event loop in one write, and tells
 * `deadlines` when they were written (their deadlines count from then).
 */
export function batchWrites(redis: Redis, deadlines: CommandDeadlines): void {
  const host = redis as unknown as CommandHost;
  const send = host.sendCommand.bind(redis);
  /** Whether this turn's commands are held (a cork is on and its uncork scheduled). */
  let corked = false;
  const uncork = (socket: Socket): void => {
    corked = false;
    batchedWrites.flushes++;
    socket.uncork();
    deadlines.written(socket);
  };
  host.sendCommand = (command: Command, stream?: unknown) => {
    const socket = host.stream;
    // Only the connection's own socket, once ready (the handshake's commands go one by one).
    if (!corked && socket !== undefined && redis.status === 'ready' && !socket.destroyed) {
      socket.cork();
      corked = true;
      setImmediate(uncork, socket);
    }
    return send(command, stream);
  };
}
