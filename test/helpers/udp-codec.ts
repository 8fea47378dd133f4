// The UDP codec's tests read datagrams and write replies through these: a datagram parsed under
// a size limit (the default one unless given), a reply as the text sent, and a datagram that
// must be accepted or refused.
import assert from 'node:assert/strict';
import {
  DEFAULT_MAX_DATAGRAM_BYTES,
  encodeReply,
  parseRequest,
  type ParseResult,
  type UdpReply,
  type UdpRequest,
} from '../../src/core/udp-protocol.js';

/** The default datagram size limit. */
export const MAX = DEFAULT_MAX_DATAGRAM_BYTES;

/** The datagram (text or bytes) parsed under the limit. */
export const parse = (text: string | Buffer, max = MAX): ParseResult =>
  parseRequest(typeof text === 'string' ? Buffer.from(text) : text, max);

/** The reply as the text the listener sends. */
export const wire = (reply: UdpReply) => encodeReply(reply).toString('utf8');

/** The request of a datagram that must be accepted. */
export function ok(text: string): UdpRequest {
  const result = parse(text);
  assert.ok(result.ok, `refused: ${result.ok ? '' : wire(result.reply)}`);
  return result.req;
}

/** The reply to a datagram that must be refused. */
export function refused(text: string | Buffer, max = MAX): UdpReply {
  const result = parse(text, max);
  assert.ok(!result.ok, 'the datagram was accepted');
  return result.reply;
}
