// The common request datagram read without JSON.parse: one flat JSON object whose values are
// all plain ASCII strings (what id_server's clients send). JSON.parse internalizes every short
// string value it makes (a lookup in the process's string table, which grows with a large
// process) and gives each object a shape of its own making; this scanner keeps the request's
// fields as plain strings and builds the reply's echo in one fixed order. It returns what
// udp-protocol.ts's general way would have read from the same bytes, or undefined whenever
// anything in the datagram is not of that plain form (an escape, a byte outside printable
// ASCII, a value that is not a string, a field given twice, anything after the object), and
// the general way reads it instead. test/unit/udp-flat-request.test.ts holds the two equal
// over generated datagrams.

/** The fields of a request a reply echoes (ECHOED_FIELDS), each a plain string when present. */
export type FlatFields = {
  action?: string;
  rule_name?: string;
  app_name?: string;
  salt?: string;
  token?: string;
  seq?: string;
  idempotency_key?: string;
};

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN = 0x7b;
const CLOSE = 0x7d;
/** Printable ASCII, the only bytes a string of this form holds (no quote, no backslash). */
const FIRST_PRINTABLE = 0x20;
const LAST_PRINTABLE = 0x7e;

const isSpace = (b: number): boolean => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

/** The index of the first byte at or after `at` that is not JSON whitespace (the length at the end). */
function pastSpace(buf: Uint8Array, at: number): number {
  while (at < buf.length && isSpace(buf[at])) at++;
  return at;
}

/**
 * The request's echoed fields, in the order the general way's echo lists them (action,
 * rule_name, app_name, salt, token, seq, idempotency_key), or undefined for the general way.
 */
export function readFlatRequest(buf: Uint8Array): FlatFields | undefined {
  const end = buf.length;
  let at = pastSpace(buf, 0);
  if (at >= end || buf[at] !== OPEN) return undefined;
  at = pastSpace(buf, at + 1);
  // Each echoed field's value, by its number (fieldAt).
  const values: (string | undefined)[] = [undefined, undefined, undefined, undefined, undefined, undefined, undefined];
  let text: string | undefined;
  if (at < end && buf[at] === CLOSE) at++;
  else {
    for (;;) {
      // A key: its bytes are compared to the field names without making a string of it.
      if (at >= end || buf[at] !== QUOTE) return undefined;
      const keyStart = ++at;
      at = plainStringEnd(buf, at);
      if (at < 0) return undefined;
      const keyEnd = at;
      at = pastSpace(buf, at + 1);
      if (at >= end || buf[at] !== COLON) return undefined;
      at = pastSpace(buf, at + 1);
      // The value: a plain string, or the general way.
      if (at >= end || buf[at] !== QUOTE) return undefined;
      const valueStart = ++at;
      at = plainStringEnd(buf, at);
      if (at < 0) return undefined;
      const field = fieldAt(buf, keyStart, keyEnd);
      if (field !== UNKNOWN) {
        // Every byte read so far is ASCII, so the datagram's Latin-1 text is its UTF-8 text.
        text ??= latin1(buf);
        // A field given twice: JSON.parse keeps the last; the general way says so.
        if (values[field] !== undefined) return undefined;
        values[field] = text.slice(valueStart, at);
      }
      at = pastSpace(buf, at + 1);
      if (at >= end) return undefined;
      if (buf[at] === CLOSE) {
        at++;
        break;
      }
      if (buf[at] !== COMMA) return undefined;
      at = pastSpace(buf, at + 1);
    }
  }
  at = pastSpace(buf, at);
  if (at !== end) return undefined;
  const [action, rule, app, salt, token, seq, key] = values;
  const out: FlatFields = {};
  if (action !== undefined) out.action = action;
  if (rule !== undefined) out.rule_name = rule;
  if (app !== undefined) out.app_name = app;
  if (salt !== undefined) out.salt = salt;
  if (token !== undefined) out.token = token;
  if (seq !== undefined) out.seq = seq;
  if (key !== undefined) out.idempotency_key = key;
  return out;
}

/** The index of the quote that closes a plain string whose first byte is at `at`, or -1 if it is not plain. */
function plainStringEnd(buf: Uint8Array, at: number): number {
  const end = buf.length;
  for (; at < end; at++) {
    const byte = buf[at];
    if (byte === QUOTE) return at;
    if (byte < FIRST_PRINTABLE || byte > LAST_PRINTABLE || byte === BACKSLASH) return -1;
  }
  return -1;
}

function latin1(buf: Uint8Array): string {
  return Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength).toString('latin1');
}

const ACTION = 0;
const RULE = 1;
const APP = 2;
const SALT = 3;
const TOKEN = 4;
const SEQ = 5;
const KEY = 6;
const UNKNOWN = -1;

/** The number of the echoed field whose name the bytes [start, end) spell, or UNKNOWN. */
function fieldAt(buf: Uint8Array, start: number, end: number): number {
  switch (end - start) {
    case 3:
      return spells(buf, start, 'seq') ? SEQ : UNKNOWN;
    case 4:
      return spells(buf, start, 'salt') ? SALT : UNKNOWN;
    case 5:
      return spells(buf, start, 'token') ? TOKEN : UNKNOWN;
    case 6:
      return spells(buf, start, 'action') ? ACTION : UNKNOWN;
    case 8:
      return spells(buf, start, 'app_name') ? APP : UNKNOWN;
    case 9:
      return spells(buf, start, 'rule_name') ? RULE : UNKNOWN;
    case 15:
      return spells(buf, start, 'idempotency_key') ? KEY : UNKNOWN;
    default:
      return UNKNOWN;
  }
}

/** The bytes at `start` spell `name` (ASCII). */
function spells(buf: Uint8Array, start: number, name: string): boolean {
  for (let k = 0; k < name.length; k++) if (buf[start + k] !== name.charCodeAt(k)) return false;
  return true;
}
