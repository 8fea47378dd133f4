// The id_server-compatible JSON-over-UDP listener: `get` (and its alias `create`) answers an
// ID, `monitor` the counter of the current period. Every request (a JSON object) gets exactly
// reply, the request's own fields echoed with code, message and data (src/core/udp-protocol.ts),
// within the size rule of src/core/udp-reply-size.ts: a refusal no longer than the datagram,
// an answer at most twice as long, so a spoofed source address never receives much more than
// was sent in its name; nothing a client sends can stop the listener. With per-source limits
// (api/source-limits.ts), a datagram from a source over one is dropped unanswered, so nothing
// it sends is answered while it floods: the IDs of a finite rule are charged before the ID is
// taken (given back when none is), and each refusal is charged to its source. Closing, the
// listener refuses what arrives as a node shutting down (UNAVAILABLE, as HTTP's 503) and sends
// the replies still in flight before the socket closes.
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { lookup as dnsLookup, type LookupOneOptions } from 'node:dns';
import { isIP } from 'node:net';
import type { Logger } from 'pino';
import {
  encodeReply,
  errorReply,
  monitorReply,
  parseRequest,
  successReply,
  type UdpReply,
  type UdpRequest,
} from '../../core/udp-protocol.js';
import { ANSWER_FACTOR, boundedReply } from '../../core/udp-reply-size.js';
import { successText } from '../../core/udp-success.js';
import { invalid, type IdmintError } from '../../errors.js';
import type { IdService } from '../../service/id-service.js';
import { noteFailure, shuttingDown, type ErrorCounter } from '../error-policy.js';
import { errorReplyFor } from '../error-replies.js';
import { countsAsRefusal, type SourceLimits } from '../source-limits.js';

export interface UdpServer {
  readonly port: number;
  /**
   * Refuses the datagrams that arrive from now on as a node shutting down, waits (at most
   * `waitMs`) for the replies in flight to be sent, then closes the socket.
   */
  close(waitMs?: number): Promise<void>;
}

/** How long closing waits for the replies in flight by default, ms (their takes time out well before). */
export const CLOSE_WAIT_MS = 5000;

export interface UdpOptions {
  readonly port: number;
  readonly host: string;
  readonly nodeOffset: number;
  readonly maxDatagramBytes: number;
}

/** Counts and logs a refusal (noteFailure) and returns it as an IdmintError for the reply. */
export type Refused = (err: unknown) => IdmintError;

/** The largest UDP payload over IPv4. */
const MAX_UDP_PAYLOAD = 65507;
/** Room for code, message and data added to the echoed request. */
const REPLY_OVERHEAD = 512;

/**
 * The datagram answering one of `requestBytes`, within the size rule of udp-reply-size.ts
 * (undefined: no reply) and within a UDP payload.
 */
export function replyDatagram(reply: UdpReply, requestBytes: number): Buffer | undefined {
  const buf = boundedReply(reply, requestBytes);
  if (buf === undefined || buf.length <= MAX_UDP_PAYLOAD) return buf;
  return boundedReply(
    errorReply(null, 'TOO_LARGE', `the reply would be ${buf.length} bytes, over the UDP limit of ${MAX_UDP_PAYLOAD}`),
    requestBytes,
  );
}

/**
 * The datagram answering a datagram of `requestBytes` with the ID `id`: replyDatagram's of
 * successReply(req, id), its text written straight from the request (udp-success.ts) when it
 * fits whole, which is the common case.
 */
export function idDatagram(req: UdpRequest, id: string, requestBytes: number): Buffer | undefined {
  const buf = Buffer.from(successText(req, id), 'utf8');
  if (buf.length <= ANSWER_FACTOR * requestBytes && buf.length <= MAX_UDP_PAYLOAD) return buf;
  return replyDatagram(successReply(req, id), requestBytes);
}

/** An ID at hand, and the request its reply echoes. */
class IdReply {
  constructor(
    readonly req: UdpRequest,
    readonly id: string,
  ) {}
}

/**
 * Settles a refusal with the source's limits: gives back the `held` IDs charged for the
 * request and charges the refusal. True when it goes unanswered (the source is over its limit
 * of refusals).
 */
function unanswered(error: IdmintError, limits: SourceLimits | undefined, source: string, held: number): boolean {
  if (limits === undefined) return false;
  limits.refund(source, held);
  return countsAsRefusal(error.status) && !limits.refusedDatagram(source);
}

/**
 * The reply to one datagram: at once when it can be given from memory (a refusal, or an ID of
 * a cached definition this process holds); for an ID still to come, the request with the
 * promise of the ID (PendingReply); for a monitor, or a rule whose definition the limits must
 * read first, a promise of the reply. undefined: no reply, the source being over a limit
 * (counted where that was decided). How much of a reply is sent is replyDatagram's rule.
 */
export function handleDatagram(
  msg: Buffer,
  ids: IdService,
  opts: Pick<UdpOptions, 'nodeOffset' | 'maxDatagramBytes'>,
  refused: Refused,
  limits?: SourceLimits,
  source = '',
): UdpReply | Promise<UdpReply | IdReply | undefined> | PendingReply | IdReply | undefined {
  const parsed = parseRequest(msg, opts.maxDatagramBytes);
  if (!parsed.ok) {
    // The protocol's own refusals (not JSON, not an object, a bad field, too large) are the
    // HTTP API's INVALID_ARGUMENT.
    return unanswered(refused(invalid(parsed.reply.message as string)), limits, source, 0) ? undefined : parsed.reply;
  }
  const req = parsed.req;
  // A client token for tags that have tokens: the request's "token" field (echoed back like
  // every other field, as the protocol does).
  const token = typeof req.body.token === 'string' ? req.body.token : undefined;
  // The reply echoes the request: refuse before issuing an ID whose reply could not be sent.
  if (msg.length > 4096) {
    const size = encodeReply(req.body).length + REPLY_OVERHEAD;
    if (size > MAX_UDP_PAYLOAD) {
      const message = `the reply to this request would exceed the UDP limit of ${MAX_UDP_PAYLOAD} bytes`;
      return unanswered(refused(invalid(message)), limits, source, 0)
        ? undefined
        : errorReply(null, 'TOO_LARGE', message);
    }
  }
  if (req.action === 'monitor') {
    if (limits !== undefined && !limits.admitDatagram(source, 0)) return undefined;
    return monitor(req, token, ids, opts.nodeOffset, refused, limits, source);
  }
  // The ID of a finite rule is charged to the source before it is taken. An ID this process
  // holds in memory for a cached definition is answered at once.
  let held = 0;
  if (limits !== undefined) {
    if (limits.limitsIds) {
      const known = limits.peek(req.ruleName);
      // Read first; but a source refused everything is refused before (an unknown name costs a MySQL read).
      if (known === undefined)
        return limits.admitDatagram(source, 0)
          ? answerAfterCharge(req, token, ids, refused, limits, source)
          : undefined;
      held = limits.chargeOf(known, 1);
    }
    if (!limits.admitDatagram(source, held)) return undefined;
  }
  let got: string | Promise<string>;
  try {
    got = issue(ids, req, token);
  } catch (err) {
    const error = refused(err);
    return unanswered(error, limits, source, held) ? undefined : errorReplyFor(req, error);
  }
  if (typeof got === 'string') return new IdReply(req, got);
  return new PendingReply(req, got, held);
}

/**
 * One ID for a get: rules use the app name and salt; other tags answer their plain IDs. An
 * idempotency key (a field id_server's clients never send): a retry of the datagram gets the
 * first reply's ID.
 */
function issue(ids: IdService, req: UdpRequest, token: string | undefined): string | Promise<string> {
  // parseRequest refused a key that is not a string.
  const key = req.body.idempotency_key;
  const idempotencyKey = typeof key === 'string' ? key : undefined;
  return ids.issue({
    tag: req.ruleName,
    as: 'one',
    app: req.appName,
    salt: req.salt || undefined,
    token,
    appIfRule: true,
    idempotencyKey,
  });
}

/**
 * A get whose rule the limits must read before they can charge it (not cached, or changed): the rest of
 * handleDatagram's way.
 */
async function answerAfterCharge(
  req: UdpRequest,
  token: string | undefined,
  ids: IdService,
  refused: Refused,
  limits: SourceLimits,
  source: string,
): Promise<IdReply | UdpReply | undefined> {
  const held = limits.chargeOf(await limits.get(req.ruleName), 1);
  if (!limits.admitDatagram(source, held)) return undefined;
  try {
    return new IdReply(req, await issue(ids, req, token));
  } catch (err) {
    const error = refused(err);
    return unanswered(error, limits, source, held) ? undefined : errorReplyFor(req, error);
  }
}

/**
 * An ID still to come, the request its reply echoes, and the IDs charged for it: the reply is made where it is sent, in
 * one step.
 */
class PendingReply {
  constructor(
    readonly req: UdpRequest,
    readonly id: Promise<string>,
    readonly held: number,
  ) {}
}

async function monitor(
  req: UdpRequest,
  token: string | undefined,
  ids: IdService,
  nodeOffset: number,
  refused: Refused,
  limits: SourceLimits | undefined,
  source: string,
): Promise<UdpReply | undefined> {
  try {
    const { counter } = await ids.reads.monitor(req.ruleName, req.appName, token);
    return monitorReply(req, { counter, nodeOffset });
  } catch (err) {
    const error = refused(err);
    return unanswered(error, limits, source, 0) ? undefined : errorReplyFor(req, error);
  }
}

/**
 * The socket's address lookup: a reply goes to the sender's address, always an IP literal,
 * answered at once (the default lookup answers it too, but a tick later, through dns.lookup's
 * argument handling, for every reply). Anything else goes to dns.lookup.
 */
function literalLookup(
  host: string,
  options: LookupOneOptions,
  callback: (err: NodeJS.ErrnoException | null, address: string, family: number) => void,
): void {
  const family = isIP(host);
  if (family !== 0) callback(null, host, family);
  else dnsLookup(host, options, callback);
}

export async function startUdpServer(
  ids: IdService,
  opts: UdpOptions,
  log: Logger,
  errors: ErrorCounter,
  limits?: SourceLimits,
): Promise<UdpServer> {
  const socket: Socket = createSocket({ type: opts.host.includes(':') ? 'udp6' : 'udp4', lookup: literalLookup });
  socket.on('error', (err) => log.error({ err: err.message }, 'UDP socket error'));
  const onSent = (err: Error | null) => {
    if (err) log.debug({ err: err.message }, 'UDP reply not sent');
  };
  // Replies waiting for their ID or their answer; closing waits for them (settled() wakes it).
  let inFlight = 0;
  let closing = false;
  let closed = false;
  let idle: (() => void) | undefined;
  const settled = () => {
    if (--inFlight === 0) idle?.();
  };
  // A reply that cannot be sent is logged at debug level only, so the callback goes along only
  // then: with one, every send that succeeds at once still costs a process.nextTick to call it.
  const sendBuf = (buf: Buffer | undefined, rinfo: RemoteInfo, requestBytes: number) => {
    // A reply that comes after a close that stopped waiting has no socket to go out on.
    if (closed) log.debug({ to: rinfo.address }, 'UDP reply not sent: the listener has closed');
    else if (buf !== undefined)
      socket.send(buf, rinfo.port, rinfo.address, log.isLevelEnabled('debug') ? onSent : undefined);
    else
      log.debug(
        { bytes: requestBytes, from: rinfo.address },
        'UDP refusal not sent: it would be longer than the datagram',
      );
  };
  const send = (reply: UdpReply, rinfo: RemoteInfo, requestBytes: number) =>
    sendBuf(replyDatagram(reply, requestBytes), rinfo, requestBytes);
  const sendId = (req: UdpRequest, id: string, rinfo: RemoteInfo, requestBytes: number) =>
    sendBuf(idDatagram(req, id, requestBytes), rinfo, requestBytes);
  const refused: Refused = (err) => noteFailure('udp', err, log, errors);
  // Every datagram gets one reply, an unexpected fault included.
  const failed = (err: Error, rinfo: RemoteInfo, requestBytes: number) => {
    refused(err);
    send(errorReply(null, 'INTERNAL'), rinfo, requestBytes);
  };
  // Closing: each datagram is refused as a node shutting down, its source's limits applying.
  const refuseClosing = (msg: Buffer, rinfo: RemoteInfo) => {
    const error = refused(shuttingDown());
    if (unanswered(error, limits, rinfo.address, 0)) return;
    const parsed = parseRequest(msg, opts.maxDatagramBytes);
    send(parsed.ok ? errorReplyFor(parsed.req, error) : parsed.reply, rinfo, msg.length);
  };
  socket.on('message', (msg, rinfo) => {
    if (closing) return refuseClosing(msg, rinfo);
    let reply: ReturnType<typeof handleDatagram>;
    try {
      reply = handleDatagram(msg, ids, opts, refused, limits, rinfo.address);
    } catch (err) {
      failed(err as Error, rinfo, msg.length);
      return;
    }
    // Its source is over a limit: no reply.
    if (reply === undefined) return;
    const requestBytes = msg.length;
    // Answered from memory: sent at once, without a closure or a promise.
    if (reply instanceof IdReply) sendId(reply.req, reply.id, rinfo, requestBytes);
    else if (reply instanceof Promise) {
      inFlight++;
      reply
        .then(
          (resolved) => {
            if (resolved instanceof IdReply) sendId(resolved.req, resolved.id, rinfo, requestBytes);
            else if (resolved !== undefined) send(resolved, rinfo, requestBytes);
          },
          (err: Error) => failed(err, rinfo, requestBytes),
        )
        .finally(settled);
    } else if (reply instanceof PendingReply) {
      // An ID still to come: its reply is made and sent when it comes, one step after the take.
      const { req, held } = reply;
      inFlight++;
      reply.id.then(
        (id) => {
          sendId(req, id, rinfo, requestBytes);
          settled();
        },
        (err: unknown) => {
          const error = refused(err);
          if (!unanswered(error, limits, rinfo.address, held)) send(errorReplyFor(req, error), rinfo, requestBytes);
          settled();
        },
      );
    } else send(reply, rinfo, requestBytes);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(opts.port, opts.host, () => {
      socket.off('error', reject);
      resolve();
    });
  });
  const port = socket.address().port;
  log.info({ port, host: opts.host }, 'UDP listener ready');
  let closeDone: Promise<void> | undefined;
  const replied = (waitMs: number) =>
    new Promise<void>((resolve) => {
      if (inFlight === 0) return resolve();
      const timer = setTimeout(resolve, waitMs);
      idle = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  return {
    port,
    close: (waitMs = CLOSE_WAIT_MS) =>
      (closeDone ??= (async () => {
        closing = true;
        await replied(waitMs);
        if (inFlight > 0) log.warn({ inFlight, waitMs }, 'UDP listener closed with replies still in flight');
        closed = true;
        await new Promise<void>((resolve) => socket.close(() => resolve()));
      })()),
  };
}
