// The Sentinel group of scripts/redis-sentinel.sh as the Sentinel tests drive it: the script's
// commands on a base port of the test's own, and the master the sentinels name.
import { execFileSync } from 'node:child_process';
import { withRedisPort } from '../../tools/redis-server.js';

/**
 * Runs `bash scripts/redis-sentinel.sh <cmd>` for the group on base (its ports base to base+4); its stdout, trimmed.
 */
export function sentinelScript(base: number, env: Record<string, string> = {}): (cmd: string) => string {
  return (cmd) =>
    execFileSync('bash', ['scripts/redis-sentinel.sh', cmd], {
      env: { ...process.env, REDIS_SENTINEL_BASE_PORT: String(base), ...env },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    }).trim();
}

/** host:port of the master as the sentinel on sentinelPort names it. */
export const masterAddr = (sentinelPort: number, password = ''): Promise<string> =>
  withRedisPort(
    sentinelPort,
    async (s) => ((await s.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', 'idmint')) as string[]).join(':'),
    password,
  );
