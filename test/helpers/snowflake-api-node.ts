// The node the snowflake HTTP API tests run against, on a clock they move (CLOCK_MAX_BACK_MS
// 200, a 3 s lease renewed 500 ms early), and the requests they make of it: reads that must
// answer 200, admin creates and updates, refusals read for their status and code, one ID, an ID
// decoded, and the workers' leases.
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { startNode, type Node } from '../../src/process/serve.js';
import type { Clock } from '../../src/core/clock.js';
import { cleanup, testConfig, testNames } from '../../tools/env.js';
import { adminHeaders } from '../../tools/node.js';

/** Wall clock plus an adjustable offset, or frozen at one reading. */
export class TestClock implements Clock {
  offset = 0;
  frozen: number | null = null;
  now(): number {
    return this.frozen ?? Date.now() + this.offset;
  }
}

/** GET /v1/decode of a snowflake ID. */
export interface Decoded {
  mode: string;
  id: string;
  timestamp: string;
  time: number;
  worker_id: number;
  sequence: number;
}
export interface ErrorBody {
  error: { code: string; message: string };
}

const MAX_BACK_MS = 200;

/**
 * Starts the node on a TestClock before the tests of the describe it is called in, and closes it
 * and removes its data after them. Returns the clock, the node's url (once started) and the
 * requests.
 */
export function snowflakeApiNode() {
  const names = testNames();
  const clock = new TestClock();
  let node: Node;
  let url: string;

  const get = (path: string, headers: Record<string, string> = {}) => fetch(url + path, { headers });
  const json = async <T>(path: string): Promise<T> => {
    const res = await get(path);
    assert.equal(res.status, 200, `${path}: ${res.status} ${await res.clone().text()}`);
    return (await res.json()) as T;
  };
  const post = (body: unknown) =>
    fetch(`${url}/v1/admin/tags`, { method: 'POST', headers: adminHeaders, body: JSON.stringify(body) });
  const patch = (tag: string, body: unknown) =>
    fetch(`${url}/v1/admin/tags/${tag}`, { method: 'PATCH', headers: adminHeaders, body: JSON.stringify(body) });
  const refused = async (res: Response, status = 400, code = 'INVALID_ARGUMENT'): Promise<string> => {
    const body = (await res.json()) as ErrorBody;
    assert.equal(res.status, status, JSON.stringify(body));
    assert.equal(body.error.code, code, JSON.stringify(body));
    return body.error.message;
  };
  const oneId = async (tag: string) => BigInt((await json<{ id: string }>(`/v1/id/${tag}`)).id);
  const decodeId = (tag: string, id: bigint | string) => json<Decoded>(`/v1/decode/${tag}/${id}`);
  const workers = () =>
    fetch(`${url}/v1/admin/workers`, { headers: adminHeaders }).then((r) => r.json()) as Promise<{
      spaces: { worker_bits: number; leases: { worker_id: number; owner: string }[] }[];
      this_node: {
        node_id: string;
        leases: { worker_bits: number; worker_id: number; valid: boolean }[];
        clock_events: { backwards: number; waits: number };
        lease_events: { renewed: number };
      };
    }>;
  const myWorker = async (bits: number) => {
    const state = await workers();
    const lease = state.this_node.leases.find((x) => x.worker_bits === bits);
    assert.ok(lease, `this node holds no lease of width ${bits}`);
    return lease.worker_id;
  };

  before(async () => {
    node = await startNode(
      testConfig(names, { CLOCK_MAX_BACK_MS: String(MAX_BACK_MS), LEASE_TTL_MS: '3000', LEASE_MARGIN_MS: '500' }),
      { clock },
    );
    url = node.url!;
  });
  after(async () => {
    await node?.close();
    await cleanup(names);
  });

  return { clock, url: () => url, get, json, post, patch, refused, oneId, decodeId, workers, myWorker };
}
