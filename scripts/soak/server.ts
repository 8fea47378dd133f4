// The idmint under soak: a child process (`idmint serve`, tools/node.ts) on a database and
// Redis key prefix of its own (tools/env.ts), with its UDP and gRPC ports on, serving the
// soak's tags; removed with its data at the end.
import { freePort } from '../../tools/child.js';
import { cleanup, testNames, type TestNames } from '../../tools/env.js';
import { createTag, spawnNode, type ChildNode } from '../../tools/node.js';
import type { Endpoints } from './load-context.js';
import { TAGS } from './tags.js';

export interface SoakServer {
  readonly names: TestNames;
  readonly node: ChildNode;
  readonly at: Endpoints;
}

export async function startServer(): Promise<SoakServer> {
  const names = testNames();
  let node: ChildNode | undefined;
  try {
    // As the tests do: a loopback port free for TCP is taken for UDP too.
    node = await spawnNode(names, { UDP_PORT: String(await freePort()), GRPC_PORT: String(await freePort()) }, 60000);
    if (node.udpPort === undefined || node.grpcPort === undefined)
      throw new Error('idmint did not open its UDP and gRPC ports');
    const at = { url: node.url, udpPort: node.udpPort, grpcPort: node.grpcPort };
    for (const t of TAGS) await createTag(at.url, { tag: t.tag, ...t.body });
    return { names, node, at };
  } catch (err) {
    await node?.kill();
    await cleanup(names).catch(() => undefined);
    throw err;
  }
}

/** Stops the child (SIGTERM, SIGKILL after 10 s) and drops its database and keys. */
export async function stopServer(s: SoakServer): Promise<number | null> {
  const kill = setTimeout(() => void s.node.kill(), 10000);
  const code = await s.node.stop().catch(() => null);
  clearTimeout(kill);
  await cleanup(s.names);
  return code;
}
