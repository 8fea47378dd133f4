// The idmint child process the fuzz tests run against (real Redis and MySQL): a UDP port, the
// stream's count limit, the tags of the run, and the errors and fatals it logs caught as they
// come. After the tests it must still be alive and healthy, having logged no unexpected fault.
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, spawnNode, type ChildNode } from '../../tools/node.js';
import { freePort } from '../../tools/child.js';
import { RULE_DEF, SALTY_DEF, setLockedToken, STREAM_MAX_COUNT } from './fuzz-run.js';
import { agent } from './fuzz-http-send.js';

export interface FuzzNode {
  node: ChildNode;
  url: string;
  udpPort: number;
}

/** Starts the node for the enclosing describe; the fields are set once its before hook ran. */
export function openFuzzNode(): FuzzNode {
  const names = testNames();
  const session = {} as FuzzNode;
  let node: ChildNode;
  let url: string;
  let udpPort: number;
  const faults: string[] = [];

  before(async () => {
    udpPort = await freePort();
    node = await spawnNode(names, {
      STREAM_MAX_COUNT: String(STREAM_MAX_COUNT),
      UDP_PORT: String(udpPort),
      // Random admin requests carry wrong tokens by the hundred: the slowing of a guessing source is
      // admin-guard.test.ts's.
      ADMIN_AUTH_MAX_FAILURES: '1000000',
    });
    url = node.url;
    Object.assign(session, { node, url, udpPort });
    // Errors and fatals the node logs (an INTERNAL, a failed take, an uncaught exception), caught
    // as they come: the helper keeps only the last lines of output.
    let partial = '';
    const scan = (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const l of lines)
        if (/"level":(50|60)/.test(l) || /^\s*(Uncaught|Error:|TypeError|RangeError)/.test(l))
          faults.push(l.slice(0, 500));
    };
    node.proc.stdout!.on('data', scan);
    node.proc.stderr!.on('data', scan);
    await createTag(url, { tag: 'seg' });
    await createTag(url, { tag: 'nodeo', order: 'node' });
    await createTag(url, { tag: 'odd', order: 'node', stride: 2, offset: 1, node_block: 50 });
    await createTag(url, { tag: 'locked' });
    await createTag(url, { tag: 'shard', layout: 'sharded', shards: 8, app_id: 3 });
    await createTag(url, { tag: 'tiny', step: 10, min_step: 10, max_id_limit: 60 });
    await createTag(url, { tag: 'sf', mode: 'snowflake' });
    await createTag(url, { tag: 'off', enabled: false });
    await createTag(url, { tag: 'rule', ...RULE_DEF });
    await createTag(url, { tag: 'salty', ...SALTY_DEF });
    await createTag(url, { tag: 'adm-seg' });
    await createTag(url, { tag: 'adm-sf', mode: 'snowflake' });
    await createTag(url, { tag: 'adm-rule', ...RULE_DEF });
    const tok = await fetch(`${url}/v1/admin/tags/locked/tokens`, {
      method: 'POST',
      headers: adminHeaders,
      body: '{"name":"fuzz"}',
    });
    assert.equal(tok.status, 201);
    setLockedToken(((await tok.json()) as { token: string }).token);
  });

  after(async () => {
    agent.destroy();
    if (node) {
      // Still alive and healthy after everything above, and nothing logged as an unexpected fault.
      assert.equal(node.proc.exitCode, null, `the node exited:\n${node.output.slice(-40).join('\n')}`);
      const h = await fetch(`${url}/healthz`);
      assert.equal(h.status, 200);
      await node.stop();
      assert.deepEqual(faults.slice(0, 5), [], 'the node logged unexpected faults');
    }
    await cleanup(names);
  });
  return session;
}
