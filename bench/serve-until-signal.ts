// How the benchmarks' bare Fastify servers run as processes of their own: listen (PORT and HOST
// from the environment, an ephemeral loopback port by default), print `listening <url>` once
// they accept connections, and close and exit on SIGTERM or SIGINT.
import type { FastifyInstance } from 'fastify';

/** Listens, prints `listening <url>`, and closes the app and exits on SIGTERM/SIGINT. */
export async function serveUntilSignal(app: FastifyInstance): Promise<void> {
  const address = await app.listen({ port: Number(process.env.PORT ?? 0), host: process.env.HOST ?? '127.0.0.1' });
  process.stdout.write(`listening ${address}\n`);
  const stop = () => {
    app.close().finally(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
