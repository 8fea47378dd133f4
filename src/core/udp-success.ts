// The text of a `get` request's success reply, written straight from the request: the same
// bytes as encodeReply(successReply(req, id)) (test/unit/udp-success.test.ts holds them equal),
// without the reply object, its key sort and the sorted copy the general encoder makes. The
// keys a success reply can hold are the echoed fields (ECHOED_FIELDS) and code, data and
// message, so their order is fixed: this is it, by code point.
import { encodeReply, successReply, type UdpRequest } from './udp-protocol.js';

/**
 * The reply's text, for a request parseRequest accepted; the general encoder's when an echoed
 * value is not a string (a seq sent as a number or an array, a null salt), so every value is
 * written as it writes it. The action, rule and app names and the salt it checked hold no
 * character JSON escapes ([A-Za-z0-9_.-]): they are quoted as they are.
 */
export function successText(req: UdpRequest, id: string): string {
  const body = req.body;
  const { action, app_name: app, idempotency_key: key, rule_name: rule, salt, seq, token } = body;
  if (
    !maybeString(action) ||
    !maybeString(app) ||
    !maybeString(key) ||
    !maybeString(rule) ||
    !maybeString(salt) ||
    !maybeString(seq) ||
    !maybeString(token)
  )
    return encodeReply(successReply(req, id)).toString('utf8');
  let out = '{';
  if (action !== undefined) out += `"action":"${action}",`;
  if (app !== undefined) out += `"app_name":"${app}",`;
  out += `"code":0,"data":${JSON.stringify(id)},`;
  if (key !== undefined) out += `"idempotency_key":${JSON.stringify(key)},`;
  out += '"message":"success"';
  if (rule !== undefined) out += `,"rule_name":"${rule}"`;
  if (salt !== undefined) out += `,"salt":"${salt}"`;
  if (seq !== undefined) out += `,"seq":${JSON.stringify(seq)}`;
  if (token !== undefined) out += `,"token":${JSON.stringify(token)}`;
  return `${out}}`;
}

/** A string, or absent. */
const maybeString = (v: unknown): v is string | undefined => v === undefined || typeof v === 'string';
