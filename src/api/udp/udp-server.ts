// The id_server-compatible JSON-over-UDP listener: `get` (and its alias `create`) answers an
// ID, `monitor` the counter of the current period. Every request (a JSON object) gets exactly
// reply, the request's own fields echoed with code, message and data (src/core/udp-protocol.ts),
// within the size rule of src/core/udp-reply-size.ts: a refusal no longer than the datagram,
// an answer at most twice as long, so a spoofed source address never receives much more than
// was sent in its name; nothing a client sends can stop the listener.
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { lookup as dnsLookup, type LookupOneOptions } from 'node:dns';
import { isIP } from 'node:net';
import type { Logger } from 'pino';
import { encodeReply, errorReply, monitorReply, parseRequest, successReply, type UdpReply, type UdpRequest } from '../../core/udp-protocol.js';
import { ANSWER_FACTOR, boundedReply } from '../../core/udp-reply-size.js';
import { successText } from '../../core/udp-success.js';
import { invalid, type IdmintError } from '../../errors.js';
import type { IdService } from '../../service/id-service.js';
import { noteFailure, type ErrorCounter } from '../error-policy.js';
import { errorReplyFor } from '../error-replies.js';

export interface UdpServer {
  readonly port: number;
  close(): Promise<void>;
}

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
  return boundedReply(errorReply(null, 'TOO_LARGE', `the reply would be ${buf.length} bytes, over the UDP limit of ${MAX_UDP_PAYLOAD}`), requestBytes);
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
 * The reply to one datagram: at once when it can be given from memory (a refusal, or an ID of
 * a cached definition this process holds); for an ID still to come, the request with the
 * promise of the ID (PendingReply); for a monitor, a promise of the reply. How much of it is
 * sent is replyDatagram's rule.
 */
export function handleDatagram(
  msg: Buffer,
  ids: IdService,
  opts: Pick<UdpOptions, 'nodeOffset' | 'maxDatagramBytes'>,
  refused: Refused,
): UdpReply | Promise<UdpReply> | PendingReply | IdReply {
  const parsed = parseRequest(msg, opts.maxDatagramBytes);
  if (!parsed.ok) {
    // The protocol's own refusals (not JSON, not an object, a bad field, too large) are the
    // HTTP API's INVALID_ARGUMENT.
    refused(invalid(parsed.reply.message as string));
    return parsed.reply;
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
      refused(invalid(message));
      return errorReply(null, 'TOO_LARGE', message);
    }
  }
  if (req.action === 'monitor') return monitor(req, token, ids, opts.nodeOffset, refused);
  // Rules use the app name and salt; other tags answer their plain IDs. An ID this process
  // holds in memory for a cached definition is answered at once.
  // An idempotency key (a field id_server's clients never send): a retry of the datagram gets
  // the first reply's ID.
  // parseRequest refused a key that is not a string.
  const key = req.body.idempotency_key;
  const idempotencyKey = typeof key === 'string' ? key : undefined;
  let got: string | Promise<string>;
  try {
    got = ids.issue({ tag: req.ruleName, as: 'one', app: req.appName, salt: req.salt || undefined, token, appIfRule: true, idempotencyKey });
  } catch (err) {
    return errorReplyFor(req, refused(err));
  }
  if (typeof got === 'string') return new IdReply(req, got);
  return new PendingReply(req, got);
}

/** An ID still to come, and the request its reply echoes: the reply is made where it is sent, in one step. */
class PendingReply {
  constructor(
    readonly req: UdpRequest,
    readonly id: Promise<string>,
  ) {}
}

async function monitor(req: UdpRequest, token: string | undefined, ids: IdService, nodeOffset: number, refused: Refused): Promise<UdpReply> {
  try {
    const { counter } = await ids.reads.monitor(req.ruleName, req.appName, token);
    return monitorReply(req, { counter, nodeOffset });
  } catch (err) {
    return errorReplyFor(req, refused(err));
  }
}

/**
 * The socket's address lookup: a reply goes to the sender's address, always an IP literal,
 * answered at once (the default lookup answers it too, but a tick later, through dns.lookup's
 * argument handling, for every reply). Anything else goes to dns.lookup.
 */
function literalLookup(host: string, options: LookupOneOptions, callback: (err: NodeJS.ErrnoException | null, address: string, family: number) => void): void {
  const family = isIP(host);
  if (family !== 0) callback(null, host, family);
  else dnsLookup(host, options, callback);
}

export async function startUdpServer(ids: IdService, opts: UdpOptions, log: Logger, errors: ErrorCounter): Promise<UdpServer> {
  const socket: Socket = createSocket({ type: opts.host.includes(':') ? 'udp6' : 'udp4', lookup: literalLookup });
  socket.on('error', (err) => log.error({ err: err.message }, 'UDP socket error'));
  const onSent = (err: Error | null) => {
    if (err) log.debug({ err: err.message }, 'UDP reply not sent');
  };
  // A reply that cannot be sent is logged at debug level only, so the callback goes along only
  // then: with one, every send that succeeds at once still costs a process.nextTick to call it.
  const sendBuf = (buf: Buffer | undefined, rinfo: RemoteInfo, requestBytes: number) => {
    if (buf !== undefined) socket.send(buf, rinfo.port, rinfo.address, log.isLevelEnabled('debug') ? onSent : undefined);
    else log.debug({ bytes: requestBytes, from: rinfo.address }, 'UDP refusal not sent: it would be longer than the datagram');
  };
  const send = (reply: UdpReply, rinfo: RemoteInfo, requestBytes: number) => sendBuf(replyDatagram(reply, requestBytes), rinfo, requestBytes);
  const sendId = (req: UdpRequest, id: string, rinfo: RemoteInfo, requestBytes: number) => sendBuf(idDatagram(req, id, requestBytes), rinfo, requestBytes);
  const refused: Refused = (err) => noteFailure('udp', err, log, errors);
  // Every datagram gets one reply, an unexpected fault included.
  const failed = (err: Error, rinfo: RemoteInfo, requestBytes: number) => {
    refused(err);
    send(errorReply(null, 'INTERNAL'), rinfo, requestBytes);
  };
  socket.on('message', (msg, rinfo) => {
    let reply: ReturnType<typeof handleDatagram>;
    try {
      reply = handleDatagram(msg, ids, opts, refused);
    } catch (err) {
      failed(err as Error, rinfo, msg.length);
      return;
    }
    const n = msg.length;
    // Answered from memory: sent at once, without a closure or a promise.
    if (reply instanceof IdReply) sendId(reply.req, reply.id, rinfo, n);
    else if (reply instanceof Promise) {
      reply.then(
        (r) => send(r, rinfo, n),
        (err: Error) => failed(err, rinfo, n),
      );
    } else if (reply instanceof PendingReply) {
      // An ID still to come: its reply is made and sent when it comes, one step after the take.
      const { req } = reply;
      reply.id.then(
        (id) => sendId(req, id, rinfo, n),
        (err: unknown) => send(errorReplyFor(req, refused(err)), rinfo, n),
      );
    } else send(reply, rinfo, n);
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
  let closed: Promise<void> | undefined;
  return {
    port,
    close: () => (closed ??= new Promise<void>((resolve) => socket.close(() => resolve()))),
  };
}
