// A client that floods a node with gRPC Take calls it never reads, run as a child process so
// that its memory (grpc-js keeps taking an unread call's messages off the connection and holds
// them) is not the test's:
//   node --import tsx test/helpers/unread-takes.ts <port> <tag> <channels> <calls per channel>
// Each call asks for 10^8 IDs in blocks of 10,000. Once every call was either refused or began
// (its response headers arrived with its first block), prints one JSON line: {"running": n,
// "refused": n, "codes": {...}, "refusals": [...]} (refusals by gRPC status, each with its
// idmint code, retry-after and message), then holds the running calls until killed.
import { status, type ServiceError } from '@grpc/grpc-js';
import { IdsClient } from '../../tools/grpc-client.js';

const [port, tag, channels, perChannel] = process.argv.slice(2);
const total = Number(channels) * Number(perChannel);
const running = new Set<unknown>();
const refusals: { code: number; idmint: string; retryAfter: string; details: string }[] = [];
for (let c = 0; c < Number(channels); c++) {
  // One channel each: new clients do not share a connection.
  const client = new IdsClient(Number(port));
  for (let i = 0; i < Number(perChannel); i++) {
    const call = client.stub.Take({ tag, count: '100000000', block: 10_000 });
    // Never read: no 'data' listener.
    call.on('metadata', () => {
      running.add(call);
      report();
    });
    call.on('error', (e: ServiceError) => {
      running.delete(call);
      refusals.push({
        code: e.code,
        idmint: String(e.metadata.get('idmint-code')[0] ?? ''),
        retryAfter: String(e.metadata.get('retry-after')[0] ?? ''),
        details: e.details,
      });
      report();
    });
  }
}
let reported = false;
function report(): void {
  if (reported || running.size + refusals.length < total) return;
  reported = true;
  const codes: Record<string, number> = {};
  for (const r of refusals) codes[status[r.code]] = (codes[status[r.code]] ?? 0) + 1;
  console.log(JSON.stringify({ running: running.size, refused: refusals.length, codes, refusals }));
}
