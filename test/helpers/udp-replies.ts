// What UDP.md says a reply to a datagram is, written out independently of the listener for
// its tests: the code of a datagram, the request fields it echoes, compact JSON with keys sorted
// by UTF-8 bytes at every level, the short messages of the code table, and today's date as the
// example rule writes it.
import { type Json, type JsonValue } from '../../tools/udp-client.js';
import { udpRequestShape } from '../helpers/udp-oracle.js';

/** The short messages of UDP.md's code table. */
export const UDP_CODE_NAMES = new Map([
  [-1, 'UNKNOWN_RULE'],
  [-2, 'MALFORMED'],
  [-3, 'INVALID_FIELD'],
  [-4, 'UNKNOWN_ACTION'],
  [-5, 'TOO_LARGE'],
]);

/** Compact JSON with object keys sorted by their UTF-8 bytes at every level, as jsoncpp writes it. */
export function canonical(v: JsonValue): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const keys = Object.keys(v).sort((a, b) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

export function todayUtc(ms: number): string {
  const d = new Date(ms);
  return `${d.getUTCFullYear() % 10}${String(d.getUTCMonth() + 1).padStart(2, '0')}${String(d.getUTCDate()).padStart(2, '0')}`;
}

// ---- the documented request rules, written out independently as an oracle for the fuzz ----

/** What UDP.md says the reply to a datagram is: its code, and whether it echoes a request object. */
export function expected(buf: Buffer, maxBytes: number, rules: ReadonlySet<string>): { code: number; echo?: Json } {
  const shape = udpRequestShape(buf, maxBytes);
  if (shape.code !== 0 || !shape.request) return { code: shape.code, echo: shape.request };
  const o = shape.request;
  // Rule names that differ from an existing one only in letter case are left out of the fuzz
  // (UDP.md does not say whether rule names are case-sensitive): report them as valid.
  if (![...rules].some((n) => n.toLowerCase() === (o.rule_name as string).toLowerCase())) return { code: -1, echo: o };
  return { code: 0, echo: o };
}

const ECHOED = ['action', 'rule_name', 'app_name', 'salt', 'token', 'seq', 'idempotency_key'];

/**
 * The request as UDP.md says the reply echoes it: only the protocol's fields, each only when it
 * is a string or written in the datagram as compact JSON writes it back (no number re-expanded).
 */
export function echoed(o: Json, text: string): Json {
  const out: Json = {};
  for (const k of ECHOED)
    if (Object.hasOwn(o, k) && (typeof o[k] === 'string' || text.includes(JSON.stringify(o[k])))) out[k] = o[k];
  return out;
}
