// The admin import route and its report for the import tests: an import that must succeed, a
// tag's admin view, the check that IDs lie above the old system's and none comes twice, and a
// zone whose day is not about to end (so a test's period stays the import's).
import assert from 'node:assert/strict';
import { adminHeaders } from '../../tools/node.js';

export type Json = Record<string, unknown>;
export type Report = {
  dry_run: boolean;
  tags: {
    tag: string;
    action: string;
    counter_floor?: string;
    floors: { shard: number; scope: string; counter: string }[];
    tokens_added: number;
    notes: string[];
  }[];
};

export async function importVia(url: string, body: Json): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${url}/v1/admin/import`, {
    method: 'POST',
    headers: adminHeaders,
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

export async function mustImport(url: string, body: Json): Promise<Report> {
  const r = await importVia(url, body);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body as unknown as Report;
}

export async function tagStatus(url: string, tag: string): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${url}/v1/admin/tags/${tag}`, { headers: adminHeaders });
  return { status: res.status, body: (await res.json()) as Json };
}

// A zone where the day is not about to end, so the test's period stays the import's.
export const ZONE = ['UTC', 'Asia/Shanghai', 'America/New_York'].find((z) => {
  const h = Number(
    new Intl.DateTimeFormat('en-US', { timeZone: z, hour: 'numeric', hourCycle: 'h23' }).format(Date.now()),
  );
  return h >= 1 && h <= 22;
})!;

export function assertAbove(ids: readonly bigint[], floor: bigint, what: string): void {
  assert.equal(new Set(ids).size, ids.length, `${what}: an ID twice`);
  for (const id of ids) assert.ok(id > floor, `${what}: ${id} is not above ${floor}`);
}
