// The id_server protocol's request rules as docs/UDP.md states them, written out independently
// of src/core/udp-protocol.ts so tests can check the listener against the documentation.
import type { Json } from '../../tools/udp-client.js';

const NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const SALT = /^[A-Za-z0-9_.-]{0,64}$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

function depth(v: unknown): number {
  if (v === null || typeof v !== 'object') return 0;
  let d = 0;
  for (const c of Object.values(v)) d = Math.max(d, depth(c));
  return d + 1;
}

/**
 * A datagram's answer before its rule is looked up: the refusal code (-5 too large, -2 not a
 * JSON object, -3 a missing or bad field, -4 an unknown action) with the request when the reply
 * must echo it, or code 0 and the request when it is well-formed.
 */
export function udpRequestShape(buf: Buffer, maxBytes: number): { code: number; request?: Json } {
  if (buf.length > maxBytes) return { code: -5 };
  if (buf.length === 0) return { code: -2 };
  let v: unknown;
  try {
    v = JSON.parse(utf8.decode(buf));
  } catch {
    return { code: -2 };
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v) || depth(v) > 32) return { code: -2 };
  const o = v as Json;
  const has = (k: string) => Object.hasOwn(o, k);
  if (!has('action') || typeof o.action !== 'string') return { code: -3, request: o };
  if (!['get', 'create', 'monitor'].includes(o.action)) return { code: -4, request: o };
  const salt = has('salt') && o.action !== 'monitor' ? o.salt : null;
  const fieldsOk =
    has('rule_name') &&
    typeof o.rule_name === 'string' &&
    NAME.test(o.rule_name) &&
    has('app_name') &&
    typeof o.app_name === 'string' &&
    NAME.test(o.app_name) &&
    (salt === null || (typeof salt === 'string' && SALT.test(salt)));
  return { code: fieldsOk ? 0 : -3, request: o };
}
