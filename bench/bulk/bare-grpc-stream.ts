// The floor of bench:bulk-single's gRPC bulk consumer (--consumer grpc): a bare grpc-js server
// of idmint's proto, a process of its own, whose Take answers blocks of ascending IDs from one
// counter, as one inclusive run each when the take asks for ranges (TakeBlock.ranges) and as
// decimal strings otherwise (TakeBlock.ids), each block encoded with the proto's own serializer
// and written once HTTP/2 has taken the one before (write()'s callback), at BARE_STREAM_RATE IDs
// a second (0: as fast as the reader takes them). Beside the bare route and echo server it puts
// the same messages through the same library, kernel and cores as idmint's gRPC bulk consumer
// does, with nothing of idmint's process: what such a stream costs single requests on this
// machine whatever serves it. Prints `listening 127.0.0.1:<port>` (GRPC_PORT, 0: any); exits on
// SIGTERM or SIGINT.
import { paced } from './pace.js';
import { Server, ServerCredentials, status, type ServerWritableStream } from '@grpc/grpc-js';
import { idsServiceEncodingTakes } from '../../src/api/grpc/proto.js';

const { service, encode } = idsServiceEncodingTakes();
/** The next ID of the stream. */
let nextId = 1;

/** A block of `count` ascending IDs, encoded: one run, or a string per ID. */
function fill(count: number, ranges: boolean): Buffer {
  if (ranges) {
    const first = nextId;
    nextId += count;
    return encode({ ranges: [{ first: String(first), last: String(nextId - 1) }] });
  }
  const ids = new Array<string>(count);
  for (let i = 0; i < count; i++) ids[i] = String(nextId++);
  return encode({ ids });
}

type TakeCall = ServerWritableStream<{ count: string; block: number; ranges: boolean }, Buffer>;

async function take(call: TakeCall): Promise<void> {
  const count = Number(call.request.count);
  const block = call.request.block || Math.min(count, 10_000);
  let cancelled = false;
  call.once('cancelled', () => (cancelled = true));
  for (let sent = 0; sent < count && !cancelled; ) {
    const size = Math.min(block, count - sent);
    await paced(size);
    await new Promise<void>((resolve) => call.write(fill(size, call.request.ranges), () => resolve()));
    sent += size;
  }
  if (!cancelled) call.end();
}

const unimplemented = (_call: unknown, callback: (e: { code: number }) => void) =>
  callback({ code: status.UNIMPLEMENTED });
const server = new Server();
server.addService(service, { Next: unimplemented, Decode: unimplemented, Take: (call: TakeCall) => void take(call) });
const port = await new Promise<number>((resolve, reject) =>
  server.bindAsync(`127.0.0.1:${Number(process.env.GRPC_PORT ?? 0)}`, ServerCredentials.createInsecure(), (err, p) =>
    err ? reject(err) : resolve(p),
  ),
);
process.stdout.write(`listening 127.0.0.1:${port}\n`);
const stop = () => server.forceShutdown();
process.on('SIGTERM', () => (stop(), process.exit(0)));
process.on('SIGINT', () => (stop(), process.exit(0)));
