// The servers of the scaling benchmark, each a child process on a port of its own: idmint
// `serve --processes N`, and the bare route (N > 1: N copies under node's cluster module).
import { ADMIN_TOKEN, type TestNames } from '../../tools/env.js';
import { startServer, type Server } from '../server.js';

/**
 * A server that is ready once a line of its output passes `ready`. pin: every thread of every
 * process of it on CPU 1 (the load stays on CPU 0).
 */
function startScaleServer(
  name: string,
  args: string[],
  env: Record<string, string>,
  ready: (line: string) => boolean,
  pin: boolean,
): Promise<Server> {
  return startServer(name, args, { env, ready, pinTree: pin ? 1 : undefined, timeoutMs: 60_000, stopMs: 40_000 });
}

/**
 * The bare route; with incr, one Redis INCR of incr.key per request on incr.url, or (shared) one
 * INCRBY per event-loop turn shared by the turn's requests (see bench/bare-server.ts).
 */
export function startBare(
  processes: number,
  pin: boolean,
  incr?: { url: string; key: string; shared: boolean },
): Promise<Server> {
  const env: Record<string, string> = incr
    ? { BARE_INCR_REDIS: incr.url, BARE_INCR_KEY: incr.key, BARE_INCR_SHARED: incr.shared ? '1' : '0' }
    : {};
  const name = incr ? (incr.shared ? 'bare+incrby' : 'bare+incr') : 'bare';
  return processes === 1
    ? startScaleServer(name, ['bench/bare-server.ts'], env, (l) => l.startsWith('listening '), pin)
    : startScaleServer(
        `${name} x${processes}`,
        ['bench/scale/bare-cluster.ts', String(processes)],
        env,
        (l) => l.startsWith('bare cluster ready'),
        pin,
      );
}

/** idmint `serve --processes N`; extra: settings of its own (the `alt` case's), named in its NODE_ID. */
export function startIdmint(
  processes: number,
  names: TestNames,
  runId: string,
  redisUrl: string,
  pin: boolean,
  extra: Record<string, string> = {},
): Promise<Server> {
  const alt = Object.keys(extra).length > 0;
  const env = {
    REDIS_URL: redisUrl,
    MYSQL_URL: names.mysqlUrl,
    REDIS_PREFIX: names.prefix,
    ADMIN_TOKEN,
    LOG_LEVEL: 'info',
    UDP_PORT: '0',
    GRPC_PORT: '0',
    NODE_ID: `scale-${runId}-p${processes}${alt ? '-alt' : ''}`,
    ...extra,
  };
  const readyMsg = processes === 1 ? 'idmint listening' : 'all serving processes ready';
  return startScaleServer(
    `idmint${alt ? ' (alt)' : ''} x${processes}`,
    ['src/cli.ts', 'serve', '--processes', String(processes)],
    env,
    (l) => l.includes(`"msg":"${readyMsg}"`),
    pin,
  );
}
