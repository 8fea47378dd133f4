// The JSON-over-UDP protocol of id_server, as a pure codec: datagram → request or error
// reply, reply → datagram. A reply is the request object echoed back with `code`, `message`
// and (on success) `data` set, keys sorted as jsoncpp writes them. Where id_server stays
// silent or guesses (bad JSON, missing fields, unknown actions, oversized datagrams) this
// codec answers with a non-zero code, so a client waiting on a reply never hangs. Nothing
// here throws, whatever the bytes.
import { isValidAppName, isValidSalt } from './rule-template.js';
import { readFlatRequest } from './udp-flat-request.js';
import { TAG_NAME } from './spec-problems.js';

/** Every code a reply can carry. 0 and -1 mean what they mean in id_server. */
export const UDP_CODES = {
  SUCCESS: { code: 0, meaning: 'success: the ID is in data (monitor: message "ok", the counter state in data)' },
  UNKNOWN_RULE: { code: -1, meaning: 'no rule of that rule_name exists (as in id_server)' },
  MALFORMED: { code: -2, meaning: 'the datagram is empty, not UTF-8 JSON, not a JSON object, or nested too deeply' },
  INVALID_FIELD: { code: -3, meaning: 'a field is missing or invalid: action, rule_name, app_name or salt' },
  UNKNOWN_ACTION: { code: -4, meaning: 'action is not get, create or monitor' },
  TOO_LARGE: { code: -5, meaning: 'the datagram is larger than the server accepts' },
  ID_SPACE_EXHAUSTED: {
    code: -6,
    meaning: 'the counter reached max_counter in this period; no ID until the next period',
  },
  UNAVAILABLE: {
    code: -7,
    meaning: 'the rule cannot serve right now (store unreachable, rule disabled); retry later or on another node',
  },
  UNAUTHORIZED: { code: -8, meaning: 'the request lacks the credentials this server requires' },
  INTERNAL: { code: -9, meaning: 'an unexpected fault; the request received no ID' },
  IDEMPOTENCY_KEY_MISMATCH: {
    code: -10,
    meaning: 'the idempotency key was already used for a different request of the rule; use a new key',
  },
} as const;

export type UdpCodeName = keyof typeof UDP_CODES;

/** id_server's limit is its receive buffer; 8 KiB is far above any real request. */
export const DEFAULT_MAX_DATAGRAM_BYTES = 8192;
/** Deeper request objects are refused, so echoing and sorting them stays cheap and bounded. */
export const MAX_JSON_DEPTH = 32;

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };
/** A reply: the echoed request plus code, message and data. */
export type UdpReply = JsonObject;

export interface UdpRequest {
  /** `create` arrives as `get`; the echoed body keeps what the client sent. */
  readonly action: 'get' | 'monitor';
  readonly ruleName: string;
  readonly appName: string;
  /** '' when absent (or null). */
  readonly salt: string;
  /** The request's fields its reply echoes (ECHOED_FIELDS, as echoable() keeps them). */
  readonly body: Readonly<JsonObject>;
}

/**
 * A request, or the error reply to a datagram that is not one; `echoed`: the reply echoes a
 * request object (false for a bare `{code, message}`: no JSON object, or none that was read).
 */
export type ParseResult =
  | { readonly ok: true; readonly req: UdpRequest }
  | { readonly ok: false; readonly echoed: boolean; readonly reply: UdpReply };

/** What an action asks for: `create` is `get`; undefined for any other name. */
const actionOf = (name: string): 'get' | 'monitor' | undefined =>
  name === 'get' || name === 'create' ? 'get' : name === 'monitor' ? 'monitor' : undefined;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A reply of code and message only, for datagrams with no request object to echo. */
function bare(name: UdpCodeName, message: string): UdpReply {
  return { code: UDP_CODES[name].code, message };
}

function tooDeep(root: unknown, max: number): boolean {
  // The usual request is one flat object: nothing to walk (and no array of its values made).
  if (max >= 2 && typeof root === 'object' && root !== null && !Array.isArray(root)) {
    const fields = root as Record<string, unknown>;
    let nested = false;
    for (const key in fields) {
      const value = fields[key];
      if (typeof value === 'object' && value !== null && Object.hasOwn(fields, key)) {
        nested = true;
        break;
      }
    }
    if (!nested) return false;
  }
  const stack: [unknown, number][] = [[root, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop() as [unknown, number];
    if (typeof value !== 'object' || value === null) continue;
    if (depth > max) return true;
    for (const child of Object.values(value)) stack.push([child, depth + 1]);
  }
  return false;
}

/** The fields a reply echoes: the protocol's own; any other field is not echoed at all. */
export const ECHOED_FIELDS = ['action', 'rule_name', 'app_name', 'salt', 'token', 'seq', 'idempotency_key'] as const;

/**
 * The request as its reply echoes it: the protocol's fields whose values read back no longer
 * than they were sent: a string, or a value written in the datagram as compact JSON writes it
 * back (`7`, `true`, `[1,"2"]`; not `1e20`, which would come back as 21 digits, nor `[ 1 ]`).
 * Nothing else is echoed, so no reply repeats more than the datagram held.
 */
function echoable(all: JsonObject, text: string): JsonObject {
  const out: JsonObject = {};
  for (const field of ECHOED_FIELDS) {
    if (!Object.hasOwn(all, field)) continue;
    const value = all[field];
    if (typeof value === 'string' || text.includes(JSON.stringify(value))) out[field] = value;
  }
  return out;
}

function fieldOf(body: JsonObject, name: string): JsonValue | undefined {
  return Object.hasOwn(body, name) ? body[name] : undefined;
}

function quote(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}...` : value);
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
}

/** Decodes one datagram. Never throws. */
export function parseRequest(buf: Uint8Array, maxBytes: number = DEFAULT_MAX_DATAGRAM_BYTES): ParseResult {
  try {
    if (buf.length > maxBytes)
      return {
        ok: false,
        echoed: false,
        reply: bare('TOO_LARGE', `datagram of ${buf.length} bytes is over the limit of ${maxBytes}`),
      };
    // The common datagram, a flat object of plain strings, is read without JSON.parse; its
    // fields are then both the object and what the reply echoes. Any other (an empty one
    // included) is the general way's.
    const flat = readFlatRequest(buf);
    return flat === undefined ? readJsonRequest(buf) : checkedRequest(flat, flat);
  } catch {
    return { ok: false, echoed: false, reply: bare('INTERNAL', 'internal error while reading the request') };
  }
}

/**
 * The general way of reading a datagram (parseRequest's for any datagram that is not a flat
 * object of plain strings), for one within the size limit. Never throws.
 */
export function readJsonRequest(buf: Uint8Array): ParseResult {
  try {
    if (buf.length === 0) return { ok: false, echoed: false, reply: bare('MALFORMED', 'empty datagram') };
    let text: string;
    try {
      text = utf8.decode(buf);
    } catch {
      return { ok: false, echoed: false, reply: bare('MALFORMED', 'the datagram is not valid UTF-8') };
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return { ok: false, echoed: false, reply: bare('MALFORMED', 'the datagram is not valid JSON') };
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      return {
        ok: false,
        echoed: false,
        reply: bare('MALFORMED', `the request must be a JSON object, got ${quote(parsed)}`),
      };
    }
    if (tooDeep(parsed, MAX_JSON_DEPTH)) {
      return {
        ok: false,
        echoed: false,
        reply: bare('MALFORMED', `the request is nested deeper than ${MAX_JSON_DEPTH} levels`),
      };
    }
    const all = parsed as JsonObject;
    return checkedRequest(all, echoable(all, text));
  } catch {
    return { ok: false, echoed: false, reply: bare('INTERNAL', 'internal error while reading the request') };
  }
}

/**
 * The request the fields of a JSON object make, or the error reply that says which is missing
 * or invalid; `body` is what its reply echoes.
 */
function checkedRequest(all: Readonly<JsonObject>, body: Readonly<JsonObject>): ParseResult {
  const rawAction = fieldOf(all, 'action');
  if (typeof rawAction !== 'string') {
    const msg = rawAction === undefined ? 'missing field action' : `action must be a string, got ${quote(rawAction)}`;
    return { ok: false, echoed: true, reply: failure(body, 'INVALID_FIELD', msg) };
  }
  const action = actionOf(rawAction);
  if (action === undefined) {
    return {
      ok: false,
      echoed: true,
      reply: failure(body, 'UNKNOWN_ACTION', `unknown action ${quote(rawAction)}; expected get, create or monitor`),
    };
  }

  // The list of problems is made only for a request that has one.
  let problems: string[] | undefined;
  const rule = fieldOf(all, 'rule_name');
  if (rule === undefined) (problems ??= []).push('missing field rule_name');
  else if (typeof rule !== 'string' || !TAG_NAME.test(rule))
    (problems ??= []).push(`rule_name must match [A-Za-z0-9_.-]{1,64}, got ${quote(rule)}`);
  const app = fieldOf(all, 'app_name');
  if (app === undefined) (problems ??= []).push('missing field app_name');
  else if (!isValidAppName(app)) (problems ??= []).push(`app_name must match [A-Za-z0-9_.-]{1,64}, got ${quote(app)}`);
  let salt = fieldOf(all, 'salt');
  if (salt === null || action === 'monitor') salt = undefined;
  if (salt !== undefined && !isValidSalt(salt))
    (problems ??= []).push(`salt must match [A-Za-z0-9_.-]{0,64}, got ${quote(salt)}`);
  const key = fieldOf(all, 'idempotency_key');
  if (action === 'get' && key !== undefined && key !== null && typeof key !== 'string')
    (problems ??= []).push('idempotency_key must be a string');
  if (problems !== undefined)
    return { ok: false, echoed: true, reply: failure(body, 'INVALID_FIELD', problems.join('; ')) };

  return {
    ok: true,
    req: { action, ruleName: rule as string, appName: app as string, salt: (salt as string | undefined) ?? '', body },
  };
}

/** The request echoed with code, message and data set (data dropped when undefined). */
function echo(body: Readonly<JsonObject> | null, code: number, message: string, data?: JsonValue): UdpReply {
  const out: UdpReply = {};
  if (body !== null) {
    for (const key of Object.keys(body)) {
      // An echoed "__proto__" key must stay a plain key, not become the reply's prototype.
      if (key === '__proto__')
        Object.defineProperty(out, key, { value: body[key], enumerable: true, writable: true, configurable: true });
      else out[key] = body[key];
    }
  }
  delete out.data;
  out.code = code;
  out.message = message;
  if (data !== undefined) out.data = data;
  return out;
}

/** `{...request, code: 0, message: "success", data: id}`. */
export function successReply(req: UdpRequest, id: string): UdpReply {
  return echo(req.body, 0, 'success', id);
}

/** `{...request, code: 0, message: "ok", data: {counter, node_offset}}`. */
export function monitorReply(
  req: UdpRequest,
  state: { readonly counter: number; readonly nodeOffset: number },
): UdpReply {
  return echo(req.body, 0, 'ok', { counter: state.counter, node_offset: state.nodeOffset });
}

/**
 * An error reply: the request echoed (without any `data` it carried) with the code's number
 * and a message; `{code, message}` alone when there is no request object.
 */
export function errorReply(req: UdpRequest | null, name: UdpCodeName, message?: string): UdpReply {
  return failure(req === null ? null : req.body, name, message);
}

function failure(body: Readonly<JsonObject> | null, name: UdpCodeName, message?: string): UdpReply {
  return echo(body, UDP_CODES[name].code, message ?? UDP_CODES[name].meaning);
}

/** Orders keys by code point, which is the UTF-8 byte order jsoncpp's std::map sorts by. */
function byCodePoint(left: string, right: string): number {
  const common = Math.min(left.length, right.length);
  for (let i = 0; i < common; i++) {
    let leftCode = left.charCodeAt(i);
    let rightCode = right.charCodeAt(i);
    if (leftCode === rightCode) continue;
    // Surrogates (astral code points) sort after U+E000-U+FFFF.
    if (leftCode >= 0xd800) leftCode = leftCode <= 0xdfff ? leftCode + 0x2000 : leftCode - 0x800;
    if (rightCode >= 0xd800) rightCode = rightCode <= 0xdfff ? rightCode + 0x2000 : rightCode - 0x800;
    return leftCode - rightCode;
  }
  return left.length - right.length;
}

const MAX_ENCODE_DEPTH = MAX_JSON_DEPTH + 4;
const SURROGATE = /[\uD800-\uDFFF]/;
/** Keys a JS object orders before all others (array indices; any run of digits, to be safe). */
const INDEX_LIKE = /^\d+$/;

function write(value: unknown, depth: number): string {
  if (depth > MAX_ENCODE_DEPTH) throw new RangeError('reply nested too deeply');
  if (value === null || value === undefined) return 'null';
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : 'null';
    case 'bigint':
      return value.toString();
    case 'object': {
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i++) out += (i > 0 ? ',' : '') + write(value[i], depth + 1);
        return `${out}]`;
      }
      const record = value as Record<string, unknown>;
      const keys = orderedKeys(record);
      // The usual reply is flat: one native stringify of a copy with its keys in that order.
      // Not for index-like keys (an object lists them first, in numeric order), "__proto__"
      // (not a plain key in a literal copy), or values the native encoder writes otherwise.
      let flat = keys.plain;
      const copy: Record<string, unknown> = {};
      if (flat) {
        for (const key of keys.sorted) {
          const field = record[key];
          const type = typeof field;
          if ((type === 'object' && field !== null) || type === 'bigint') {
            flat = false;
            break;
          }
          copy[key] = field;
        }
      }
      if (flat) return JSON.stringify(copy);
      let out = '{';
      for (const key of keys.sorted) {
        const field = record[key];
        if (field === undefined || typeof field === 'function' || typeof field === 'symbol') continue;
        out += (out.length > 1 ? ',' : '') + JSON.stringify(key) + ':' + write(field, depth + 1);
      }
      return `${out}}`;
    }
    default:
      return 'null';
  }
}

interface KeyOrder {
  /** Own keys as Object.keys lists them. */
  readonly listed: readonly string[];
  /** The same keys by code point. */
  readonly sorted: readonly string[];
  /** No index-like or "__proto__" key: a copy built in `sorted` order keeps that order. */
  readonly plain: boolean;
}

/** The last key order worked out: replies to one kind of request share it. */
let lastOrder: KeyOrder = { listed: [], sorted: [], plain: true };

function orderedKeys(record: object): KeyOrder {
  const listed = Object.keys(record);
  const last = lastOrder.listed;
  if (listed.length === last.length) {
    let same = true;
    for (let i = 0; i < listed.length && same; i++) same = listed[i] === last[i];
    if (same) return lastOrder;
  }
  // The default sort orders UTF-16 code units, which is code point order unless a key holds
  // a surrogate (an astral character): only then the slower comparison is needed.
  const sorted = [...listed].sort();
  if (sorted.some((k) => SURROGATE.test(k))) sorted.sort(byCodePoint);
  lastOrder = { listed, sorted, plain: !sorted.some((k) => k === '__proto__' || INDEX_LIKE.test(k)) };
  return lastOrder;
}

/** The datagram of a reply: compact JSON, keys sorted at every level. Never throws. */
export function encodeReply(reply: UdpReply): Buffer {
  try {
    return Buffer.from(write(reply, 0), 'utf8');
  } catch {
    return Buffer.from(
      `{"code":${UDP_CODES.INTERNAL.code},"message":"internal error: the reply could not be encoded"}`,
      'utf8',
    );
  }
}
