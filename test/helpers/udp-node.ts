// The node the UDP listener's tests run against: a UDP port, the given UDP_MAX_BYTES and node
// offset 7, and the tags they ask for (a rule of order global, a salted rule, an order-node rule
// and a segment tag, which is no rule).
import assert from 'node:assert/strict';
import { startNode, type Node } from '../../src/process/serve.js';
import { freePort } from '../../tools/child.js';
import { testConfig, type TestNames } from '../../tools/env.js';
import { createTag } from '../../tools/node.js';

/** The tags startUdpNode creates. */
export const UDP_TAGS: ReadonlySet<string> = new Set(['o2o', 'o2n', 'salted', 'seg']);

/** A node with its UDP listener and the tags above; its HTTP url and UDP port. */
export async function startUdpNode(
  names: TestNames,
  maxBytes: number,
): Promise<{ node: Node; url: string; port: number }> {
  const udpPort = await freePort();
  const node = await startNode(
    testConfig(names, { UDP_PORT: String(udpPort), UDP_MAX_BYTES: String(maxBytes), NODE_OFFSET: '7' }),
  );
  const url = node.url!;
  const port = node.udpPort!;
  assert.equal(port, udpPort);
  await createTag(url, {
    tag: 'o2o',
    mode: 'rule',
    template: '{year%10}{MM}{dd}{counter:4}',
    min_counter: 0,
    max_counter: 9999,
    reset_seconds: 86400,
    time_zone: 'UTC',
  });
  await createTag(url, {
    tag: 'salted',
    mode: 'rule',
    template: '{app}-{yyyy}{MM}{dd}-{salt}{counter:4}',
    min_counter: 0,
    max_counter: 9999,
    reset_seconds: 86400,
    time_zone: 'UTC',
  });
  await createTag(url, {
    tag: 'o2n',
    mode: 'rule',
    order: 'node',
    template: '{year%10}{MM}{dd}{counter:4}',
    min_counter: 0,
    max_counter: 9999,
    reset_seconds: 86400,
    time_zone: 'UTC',
  });
  await createTag(url, { tag: 'seg', mode: 'segment' });
  return { node, url, port };
}
