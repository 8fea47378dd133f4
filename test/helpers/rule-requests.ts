// One rule ID at a time for the rule tests, over HTTP (GET /v1/id, /v1/ids) and UDP (the
// id_server protocol), each checked for success; a rule's PATCH; and today's `{year%10}{MM}{dd}`
// in a zone, computed independently of idmint.
import assert from 'node:assert/strict';
import { adminHeaders } from '../../tools/node.js';
import { UdpClient } from '../../tools/udp-client.js';

export type Json = Record<string, unknown>;

/** GET /v1/id/:tag for a rule: the ID, or the HTTP status and error code. */
export async function httpId(
  url: string,
  tag: string,
  app: string,
  salt?: string,
): Promise<{ status: number; id?: string; code?: string }> {
  const q = new URLSearchParams({ app, ...(salt === undefined ? {} : { salt }) });
  const res = await fetch(`${url}/v1/id/${tag}?${q}`);
  const body = (await res.json()) as { id?: string; error?: { code: string } };
  return { status: res.status, id: body.id, code: body.error?.code };
}

export async function mustHttpId(url: string, tag: string, app: string): Promise<string> {
  const r = await httpId(url, tag, app);
  assert.equal(r.status, 200, `GET /v1/id/${tag}: ${r.status} ${r.code}`);
  return r.id!;
}

export async function httpIds(url: string, tag: string, app: string, count: number): Promise<string[]> {
  const res = await fetch(`${url}/v1/ids/${tag}?count=${count}&app=${app}`);
  const body = (await res.json()) as { ids?: string[] };
  assert.equal(res.status, 200, `GET /v1/ids/${tag}?count=${count}: ${res.status} ${JSON.stringify(body)}`);
  assert.equal(body.ids!.length, count);
  return body.ids!;
}

export async function udpId(c: UdpClient, port: number, rule: string, app: string, action = 'get'): Promise<string> {
  const seq = Math.random().toString(36).slice(2);
  const r = await c.request(port, { action, rule_name: rule, app_name: app, seq });
  assert.equal(r.code, 0, `UDP ${action} ${rule}: ${JSON.stringify(r)}`);
  assert.equal(r.seq, seq);
  assert.equal(typeof r.data, 'string');
  return r.data as string;
}

export async function patchTag(url: string, tag: string, body: Json): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${url}/v1/admin/tags/${tag}`, {
    method: 'PATCH',
    headers: adminHeaders,
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

/** `{year%10}{MM}{dd}` of an instant in a zone, computed independently of idmint. */
export function yMd(ms: number, zone: string): string {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).formatToParts(ms);
  const get = (t: string) => parts.find((p) => p.type === t)!.value;
  return `${Number(get('year')) % 10}${get('month')}${get('day')}`;
}
