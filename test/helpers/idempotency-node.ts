// The node the idempotency tests of each transport run against: its HTTP port, a UDP port and a
// gRPC port, and the tags they share (the segment tag 'web', 'guarded' to be given a client token,
// and the rule 'o2o').
import { freePort } from '../../tools/child.js';
import type { TestNames } from '../../tools/env.js';
import { createTag, startLocalNode } from '../../tools/node.js';

export type IdempotencyNode = Awaited<ReturnType<typeof startLocalNode>>;

/** A node listening on HTTP, UDP and gRPC, with the tags above. */
export async function startIdempotencyNode(names: TestNames): Promise<IdempotencyNode> {
  const node = await startLocalNode(names, { UDP_PORT: String(await freePort()), GRPC_PORT: String(await freePort()) });
  const url = node.url;
  await createTag(url, { tag: 'web' });
  await createTag(url, { tag: 'guarded' });
  await createTag(url, { tag: 'o2o', mode: 'rule', template: '{yyyy}{counter:6}', max_counter: 999999 });
  return node;
}
