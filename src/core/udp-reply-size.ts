// The UDP listener's reply-size rule, so that a forged source address never turns idmint into
// an amplifier: a refusal is never longer than the datagram that caused it, an answer (an ID
// or a monitor reading) never longer than twice that datagram. A reply over its limit is sent
// in id_server's older, shorter form (code, message, seq and data only; a refusal's message
// shortened to its code's name), and when even that is over, a refusal is not answered at all
// and an answer is replaced by the short TOO_LARGE refusal (its ID is not reused: a gap).
import { encodeReply, UDP_CODES, type UdpCodeName, type UdpReply } from './udp-protocol.js';

/** How many times the datagram's size an answer may take. */
export const ANSWER_FACTOR = 2;

const NAME_OF_CODE = new Map<number, UdpCodeName>(
  Object.entries(UDP_CODES).map(([name, entry]) => [entry.code, name as UdpCodeName]),
);

/** The most bytes a reply to a datagram of `requestBytes` may take. */
export function replyLimit(reply: UdpReply, requestBytes: number): number {
  return reply.code === UDP_CODES.SUCCESS.code ? ANSWER_FACTOR * requestBytes : requestBytes;
}

/** `reply` in the shortest form id_server clients read: code, message, seq and data. */
function compact(reply: UdpReply, message: string, withSeq: boolean): UdpReply {
  const out: UdpReply = { code: reply.code, message };
  if (withSeq && reply.seq !== undefined) out.seq = reply.seq;
  if (reply.data !== undefined) out.data = reply.data;
  return out;
}

/**
 * The datagram answering a datagram of `requestBytes` with `reply`, within the limit; undefined
 * for no reply (a refusal that cannot be told in fewer bytes than the request took).
 */
export function boundedReply(reply: UdpReply, requestBytes: number): Buffer | undefined {
  const limit = replyLimit(reply, requestBytes);
  const full = encodeReply(reply);
  if (full.length <= limit) return full;
  const success = reply.code === UDP_CODES.SUCCESS.code;
  const name = typeof reply.code === 'number' ? NAME_OF_CODE.get(reply.code) : undefined;
  const short = success ? String(reply.message) : (name ?? 'INTERNAL');
  for (const withSeq of [true, false]) {
    const buf = encodeReply(compact(reply, short, withSeq));
    if (buf.length <= limit) return buf;
  }
  if (!success) return undefined;
  const refusal = encodeReply({ code: UDP_CODES.TOO_LARGE.code, message: 'TOO_LARGE' });
  return refusal.length <= requestBytes ? refusal : undefined;
}
