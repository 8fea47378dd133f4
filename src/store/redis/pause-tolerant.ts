// ioredis's two silence detectors, made blind to pauses of this process. Both are plain
// timers: `commandTimeout` rejects a command without a reply ("Command timed out") and
// `socketTimeout` destroys a connection that received nothing while commands wait. After a
// pause of the process (SIGSTOP, a long GC, a frozen VM) both fire before Node reads the
// replies that arrived meanwhile, so a resumed process failed the commands it had in flight
// and then every request until its connections were open again. Here each detector lets one
// poll phase run before it acts (src/late-timeout.ts): a reply read by then settles the
// command, or shows the connection alive, and nothing is failed. A silent network still
// trips both, one event-loop turn later than before.
//
// The two methods are replaced on ioredis's prototypes, so they apply to every connection
// (single server, each node of a cluster, BullMQ's). installPauseTolerance() checks that
// the methods it replaces exist and throws otherwise: an ioredis that renamed them must not
// quietly bring the old behaviour back.
import type { Socket } from 'node:net';
import { Command, Redis } from 'ioredis';
import { lateTimeout } from '../../late-timeout.js';

/** The parts of ioredis's Redis that its socket timeout uses (private in its typings). */
interface SocketTimeoutHost {
  stream: Socket;
  options: { socketTimeout?: number };
  commandQueue: { length: number };
  socketTimeoutTimer: NodeJS.Timeout | undefined;
  setSocketTimeout(): void;
}

/** The parts of ioredis's Command that its command timeout uses. */
interface CommandTimeoutHost {
  isSettled: boolean;
  reject(err: Error): void;
  _commandTimeoutTimer: NodeJS.Timeout | undefined;
  setTimeout(ms: number): void;
}

function setSocketTimeout(this: SocketTimeoutHost): void {
  const stream = this.stream;
  const ms = this.options.socketTimeout;
  const timer = lateTimeout(() => {
    // Data read in the last poll phase cleared or replaced this timer: the peer is alive.
    if (this.socketTimeoutTimer !== timer) return;
    this.socketTimeoutTimer = undefined;
    stream.destroy(new Error(`Socket timeout. Expecting data, but didn't receive any in ${ms}ms.`));
  }, ms ?? 0);
  this.socketTimeoutTimer = timer;
  // Registered after ioredis's own "data" handler, so commandQueue is already updated.
  stream.once('data', () => {
    clearTimeout(timer);
    if (this.socketTimeoutTimer === timer) this.socketTimeoutTimer = undefined;
    if (this.commandQueue.length > 0 && this.socketTimeoutTimer === undefined) this.setSocketTimeout();
  });
}

function setCommandTimeout(this: CommandTimeoutHost, ms: number): void {
  if (this._commandTimeoutTimer) return;
  this._commandTimeoutTimer = lateTimeout(() => {
    if (!this.isSettled) this.reject(new Error('Command timed out'));
  }, ms);
}

let installed = false;

/** Replaces both detectors once per process; idempotent. */
export function installPauseTolerance(): void {
  if (installed) return;
  const redisProto = Redis.prototype as unknown as SocketTimeoutHost;
  const commandProto = Command.prototype as unknown as CommandTimeoutHost;
  if (typeof redisProto.setSocketTimeout !== 'function' || typeof commandProto.setTimeout !== 'function') {
    throw new Error(
      "ioredis no longer has Redis#setSocketTimeout or Command#setTimeout: idmint's pause-tolerant timeouts cannot be installed",
    );
  }
  redisProto.setSocketTimeout = setSocketTimeout;
  commandProto.setTimeout = setCommandTimeout;
  installed = true;
}
