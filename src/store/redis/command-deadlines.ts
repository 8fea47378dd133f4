// The request path's two silence detectors (connection.ts) on one timer per connection instead
// of two per command. ioredis's `commandTimeout` arms a timer for every command and clears it
// at the reply, and its `socketTimeout` arms another (and a "data" listener) whenever a command
// is sent while none is armed: a request served by one take paid for both, every time. Here
// the connection keeps its commands in the order they were sent, with the moment each one is
// due; one timer waits for the oldest that may still be unanswered, and when it fires it drops
// the answered ones from the head and judges the first that is not: past its deadline, the
// command is failed ("Command timed out", as ioredis says it), and when the connection has
// received nothing since that command was sent, the connection is destroyed (as socketTimeout
// does) so that later commands are not queued behind a silent peer. Replies come back in the
// order the commands were sent, so the head is the only command that can be the oldest one
// waiting; the timer is re-armed for the next head only then, so while commands are answered
// within their bound it fires about once per bound, whatever the rate. Each send also drops
// the answered commands at the head, so the queue holds about the commands in flight: a
// command (its arguments and reply) is not kept until the next sweep, which at thousands of
// commands a second would carry each one past the young generation's collections into the
// old one.
//
// The timer is a late timeout (late-timeout.ts): after a pause of this process, replies that
// arrived meanwhile are read before any command is judged, as pause-tolerant.ts does for
// ioredis's own detectors. The connection's write batching (write-batching.ts) writes a turn's
// commands at its end and calls written(socket): their deadlines then count from that write.
import type { Socket } from 'node:net';
import type { Command, Redis } from 'ioredis';
import { lateTimeout } from '../../late-timeout.js';

/** The parts of ioredis's Command this uses (isSettled is not in its typings). */
interface Pending {
  readonly command: Command & { readonly isSettled: boolean };
  /** When it is due (performance.now(), ms): from when it was handed over, then from when it was written. */
  due: number;
  /** The stream it was written to, and what that stream had read by then. */
  stream: Socket | undefined;
  bytesRead: number;
}

/** What the connection's write batching (write-batching.ts) tells the deadlines. */
export interface CommandDeadlines {
  /**
   * The commands handed over since the last call have just been written to `socket`: their
   * deadlines count from now, and their silence is that socket's, so a pause of the process
   * between a command's making and its write (both in one turn of the event loop) is not taken
   * for the server's silence.
   */
  written(socket: Socket): void;
}

/**
 * The parts of ioredis's Redis that wrap its sending (here and write-batching.ts): stream and
 * sendCommand's stream argument are private in its typings.
 */
export interface CommandHost {
  stream?: Socket;
  sendCommand(command: Command, stream?: unknown): unknown;
}

/** Timers this module armed in this process (tests count them per request). */
export const deadlineTimers = { armed: 0 };

/**
 * Fails each command of `redis` left unanswered `ms` after it was sent, and destroys a
 * connection that received nothing in that time while a command waited. Replaces ioredis's
 * commandTimeout and socketTimeout, which must be left unset on this connection.
 */
export function installCommandDeadlines(redis: Redis, ms: number): CommandDeadlines {
  const host = redis as unknown as CommandHost;
  const send = host.sendCommand.bind(redis);
  /** Commands in the order they were sent; those before `head` were judged or answered. */
  let queue: Pending[] = [];
  let head = 0;
  /** The last commands of the queue that were handed over since the last written(). */
  let unwritten = 0;
  let timer: NodeJS.Timeout | undefined;

  const arm = (due: number) => {
    deadlineTimers.armed++;
    // Unref'd: the connection's socket keeps the process alive while a command waits; once
    // every command is answered, a pending sweep must not hold an exiting process open.
    timer = lateTimeout(sweep, Math.max(0, due - performance.now())).unref();
  };

  function sweep(): void {
    timer = undefined;
    const now = performance.now();
    while (head < queue.length) {
      const pending = queue[head];
      if (pending.command.isSettled) {
        head++;
        continue;
      }
      if (pending.due > now) break;
      head++;
      // Silent since this command was sent: reset the connection (its other commands fail or
      // are sent again on the next one, as ioredis does with a socket timeout).
      const stream = host.stream;
      if (
        stream !== undefined &&
        stream === pending.stream &&
        stream.bytesRead === pending.bytesRead &&
        !stream.destroyed
      ) {
        stream.destroy(new Error(`Socket timeout. Expecting data, but didn't receive any in ${ms}ms.`));
      }
      pending.command.reject(new Error('Command timed out'));
    }
    compact();
    if (head < queue.length) arm(queue[head].due);
  }

  /**
   * Lets go of the entries before `head`: all of them once none is left to judge, else once
   * they outnumber those left (a queue never empty at high rates keeps few answered ones).
   */
  function compact(): void {
    if (head === queue.length) {
      queue.length = 0;
      head = 0;
    } else if (head > 32 && head * 2 > queue.length) {
      queue = queue.slice(head);
      head = 0;
    }
  }

  /** Drops the answered commands at the head (replies come in the order commands were sent). */
  function dropAnswered(): void {
    while (head < queue.length && queue[head].command.isSettled) head++;
    compact();
  }

  host.sendCommand = (command: Command, stream?: unknown) => {
    const out = send(command, stream);
    const pendingCommand = command as Pending['command'];
    if (!pendingCommand.isSettled) {
      dropAnswered();
      const socket = host.stream;
      queue.push({
        command: pendingCommand,
        due: performance.now() + ms,
        stream: socket,
        bytesRead: socket?.bytesRead ?? 0,
      });
      unwritten++;
      if (timer === undefined) arm(queue[head].due);
    }
    return out;
  };

  return {
    written(socket) {
      // Later deadlines only: a timer armed for an earlier one finds the head not yet due and arms again.
      const now = performance.now();
      for (let i = Math.max(head, queue.length - unwritten); i < queue.length; i++) {
        const pending = queue[i];
        pending.due = now + ms;
        pending.stream = socket;
        pending.bytesRead = socket.bytesRead;
      }
      unwritten = 0;
    },
  };
}
