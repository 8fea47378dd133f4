// The baseline servers of `npm run bench:udp`, each a child process started by the bench with
// its role as the first argument:
//   echo               a bare Node dgram server that parses the JSON and echoes it with code,
//                      message and data
//   redis-echo         the same doing one Redis INCR per request
//   redis-script-echo  one EVALSHA of a script that only returns 1, with a take's keys and arguments
//   redis-floor-echo   one EVALSHA of the floor of a safe take (bench/take-floor.ts)
//   redis-take-echo    one EVALSHA of idmint's own take (take-2.lua, steady state)
// The Redis ones take the bench's Redis key and the URL of the run's redis-server as their
// second and third arguments. Each tells the bench its port over IPC when it listens, exits on
// SIGTERM (so that --cpu-prof writes its profile) and when the bench is gone.
import { createSocket } from 'node:dgram';
import { Redis } from 'ioredis';
import { Keys } from '../../src/store/redis/keys.js';
import { scriptText } from '../../src/store/redis/lua.js';
import { TAKE_FLOOR_LUA } from '../take-floor.js';
import { steadySegment, takeTokens } from '../take-segment.js';

async function echoServer(): Promise<void> {
  const sock = createSocket('udp4');
  sock.on('message', (msg, r) => {
    let reply: Buffer;
    try {
      const req = JSON.parse(msg.toString()) as Record<string, unknown>;
      reply = Buffer.from(JSON.stringify({ ...req, code: 0, message: 'success', data: '1' }));
    } catch {
      reply = Buffer.from('{"code":-2}');
    }
    sock.send(reply, r.port, r.address);
  });
  sock.bind(0, '127.0.0.1', () => process.send!({ port: sock.address().port }));
}

/** What a Redis baseline server does per request. */
type RedisCall = 'incr' | 'noop' | 'floor' | 'take';

/** The keys of the take server's segment hash: under the bench's Redis key. */
const takeKeys = (key: string) => new Keys(`${key}:take`);
const TAKE_TAG = 'udp';
/** The prefetch fraction the take server passes (irrelevant: its segment never ends in a run). */
const TAKE_PREFETCH = 0.9;

/** The Redis baseline servers' roles (the child's first argument) and what each does. */
const REDIS_ROLES: Readonly<Record<string, RedisCall>> = {
  'redis-echo': 'incr',
  'redis-script-echo': 'noop',
  'redis-floor-echo': 'floor',
  'redis-take-echo': 'take',
};

/**
 * The Redis baselines: the echo server, plus one Redis call per request (no coalescing) whose
 * value is the reply's data. incr: one raw INCR, what a Redis round trip per request costs on
 * this machine. noop: one EVALSHA of a script that only returns 1, with the keys and arguments
 * of a take: the floor of a round trip that runs a script. floor: one EVALSHA of the floor of
 * a safe take (the identity read and one HINCRBY), with the same keys and arguments. take: one
 * EVALSHA of take-2.lua for one ID of a hash in its steady state (an integer reply, the ID).
 */
async function redisEchoServer(key: string, url: string, kind: RedisCall): Promise<void> {
  const redis = new Redis(url);
  const call = await callOf(redis, key, kind);
  const sock = createSocket('udp4');
  sock.on('message', (msg, r) => {
    let req: Record<string, unknown>;
    try {
      req = JSON.parse(msg.toString()) as Record<string, unknown>;
    } catch {
      sock.send('{"code":-2}', r.port, r.address);
      return;
    }
    call().then(
      (n) => sock.send(JSON.stringify({ ...req, code: 0, message: 'success', data: String(n) }), r.port, r.address),
      () => sock.send(JSON.stringify({ ...req, code: -5, message: 'redis' }), r.port, r.address),
    );
  });
  sock.bind(0, '127.0.0.1', () => process.send!({ port: sock.address().port }));
}

/** The one Redis call a baseline server makes per request; it resolves with the reply's data. */
async function callOf(redis: Redis, key: string, kind: RedisCall): Promise<() => Promise<unknown>> {
  if (kind === 'incr') return () => redis.incr(key);
  if (kind === 'take') {
    const { seg, moved, ref } = await steadySegment(redis, takeKeys(key), TAKE_TAG, TAKE_PREFETCH);
    const sha = String(await redis.script('LOAD', scriptText('take-2')));
    const token = takeTokens('bench');
    // Anything but an integer (the steady state's reply) is a failed request.
    return () =>
      redis.evalsha(sha, 2, seg, moved, 1, token(), TAKE_PREFETCH, ref.epoch).then((first) => {
        if (typeof first !== 'number') throw new Error(`take answered ${JSON.stringify(first)}`);
        return first;
      });
  }
  const sha = String(await redis.script('LOAD', kind === 'noop' ? 'return 1' : TAKE_FLOOR_LUA));
  return () => redis.evalsha(sha, 2, `${key}:seg`, `${key}:moved`, 1, 'g', 0.2, 1);
}

const role = process.argv[2];
const redisCall = Object.hasOwn(REDIS_ROLES, role) ? REDIS_ROLES[role] : undefined;
if (role !== 'echo' && redisCall === undefined) throw new Error(`unknown role ${role}`);
process.on('SIGTERM', () => process.exit(0));
if (process.connected) process.once('disconnect', () => process.exit(0));
else process.exit(0);
if (redisCall) void redisEchoServer(process.argv[3], process.argv[4], redisCall);
else void echoServer();
