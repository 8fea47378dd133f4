// The gRPC benchmark's baseline: a bare grpc-js server of the same proto (idmint.v1.Ids)
// whose Next answers a constant ID. It runs as its own process (started by bench/grpc.ts) so
// that it has the same share of the machine as the idmint server under test.
// Prints `listening <port>` once it accepts calls; exits on SIGTERM/SIGINT.
import { Server, ServerCredentials, status, type handleUnaryCall } from '@grpc/grpc-js';
import { idsService } from '../src/api/grpc/proto.js';

const next: handleUnaryCall<unknown, { ids: string[] }> = (_call, callback) => callback(null, { ids: ['1'] });
const unimplemented = (_call: unknown, callback: (e: { code: number }) => void) =>
  callback({ code: status.UNIMPLEMENTED });

const server = new Server();
server.addService(idsService(), {
  Next: next,
  Decode: unimplemented,
  Take: (call: { emit(e: string, v: unknown): void }) => call.emit('error', { code: status.UNIMPLEMENTED }),
});
const port = await new Promise<number>((resolve, reject) =>
  server.bindAsync(`127.0.0.1:${Number(process.env.GRPC_PORT ?? 0)}`, ServerCredentials.createInsecure(), (err, p) =>
    err ? reject(err) : resolve(p),
  ),
);
process.stdout.write(`listening ${port}\n`);

const stop = () => server.tryShutdown(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
