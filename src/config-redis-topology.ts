// The default Redis's topology as the environment gives it: the seeds of a Redis Cluster
// (REDIS_CLUSTER_NODES), or the Sentinel group that names its master (REDIS_SENTINELS,
// REDIS_SENTINEL_MASTER), checked against REDIS_URL and each other; a bad value is a problem
// naming the variable, as config.ts reports every one.
import { isSentinelUrl, parseHostPorts, SENTINEL_MASTER_NAME, type HostPort } from './core/redis-sentinel.js';

/** Where the default Redis is found besides REDIS_URL: a cluster's seeds, or a Sentinel group (both empty: neither). */
export interface RedisTopology {
  readonly redisClusterNodes: { host: string; port: number }[];
  readonly redisSentinels: HostPort[];
  /** The master's name the sentinels monitor ('' without sentinels). */
  readonly redisSentinelMaster: string;
}

/** Reads the cluster seeds and the Sentinel group, pushing a problem for each bad or conflicting value. */
export function readRedisTopology(
  env: Record<string, string | undefined>,
  redisUrl: string,
  redisUrls: Record<string, string>,
  problems: string[],
): RedisTopology {
  const redisClusterNodes: { host: string; port: number }[] = [];
  if ((env.REDIS_CLUSTER_NODES ?? '').trim() !== '') {
    for (const item of env
      .REDIS_CLUSTER_NODES!.split(',')
      .map((x) => x.trim())
      .filter(Boolean)) {
      const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$/.exec(item);
      if (!match || Number(match[2]) < 1 || Number(match[2]) > 65535) {
        problems.push(
          `REDIS_CLUSTER_NODES entries are host:port (a [bracketed] IPv6 host, a port from 1 to 65535), separated by commas, got "${item}"`,
        );
        continue;
      }
      redisClusterNodes.push({ host: match[1].replace(/^\[|\]$/g, ''), port: Number(match[2]) });
    }
    if (redisClusterNodes.length === 0 && !problems.some((p) => p.startsWith('REDIS_CLUSTER_NODES')))
      problems.push('REDIS_CLUSTER_NODES names no host:port');
    // REDIS_URL then only gives the nodes' credentials and TLS; a cluster has database 0 only.
    const db = problems.some((p) => p.startsWith('REDIS_URL ')) ? '' : new URL(redisUrl).pathname.replace(/^\//, '');
    if (db !== '' && db !== '0')
      problems.push(`REDIS_URL selects database ${db}, but a Redis Cluster (REDIS_CLUSTER_NODES) has database 0 only`);
  }
  const sentinelList = (env.REDIS_SENTINELS ?? '').trim();
  const sentinelMaster = (env.REDIS_SENTINEL_MASTER ?? '').trim();
  const redisSentinels: HostPort[] = [];
  if (sentinelList !== '' || sentinelMaster !== '') {
    if (sentinelList === '')
      problems.push(
        'REDIS_SENTINEL_MASTER is set without REDIS_SENTINELS: name the sentinels (host:port,host:port,...) too, or unset it',
      );
    if (sentinelMaster === '')
      problems.push('REDIS_SENTINELS is set without REDIS_SENTINEL_MASTER: name the master the sentinels monitor too');
    else if (!SENTINEL_MASTER_NAME.test(sentinelMaster))
      problems.push(`REDIS_SENTINEL_MASTER must match [A-Za-z0-9_.-]{1,64}, got "${sentinelMaster}"`);
    if (sentinelList !== '') {
      const { ok, bad } = parseHostPorts(sentinelList);
      for (const item of bad)
        problems.push(
          `REDIS_SENTINELS entries are host:port (a [bracketed] IPv6 host, a port from 1 to 65535), separated by commas, got "${item}"`,
        );
      if (ok.length === 0 && bad.length === 0) problems.push('REDIS_SENTINELS names no host:port');
      redisSentinels.push(...ok);
    }
    if (redisClusterNodes.length > 0 || (env.REDIS_CLUSTER_NODES ?? '').trim() !== '')
      problems.push(
        'REDIS_SENTINELS and REDIS_CLUSTER_NODES are both set: the default Redis is either a Sentinel-managed master or a cluster, not both',
      );
    // REDIS_URL then only gives the master's credentials and database.
    if (!problems.some((p) => p.startsWith('REDIS_URL ')) && new URL(redisUrl).protocol === 'rediss:')
      problems.push(
        'REDIS_URL is rediss:// next to REDIS_SENTINELS: TLS to a Sentinel group is not supported, use redis://',
      );
  } else if ((env.REDIS_SENTINEL_PASSWORD ?? '') !== '' && !Object.values(redisUrls).some(isSentinelUrl)) {
    problems.push(
      'REDIS_SENTINEL_PASSWORD is set but no Redis is found through sentinels (REDIS_SENTINELS or a redis+sentinel:// entry of REDIS_URLS)',
    );
  }
  return { redisClusterNodes, redisSentinels, redisSentinelMaster: sentinelList !== '' ? sentinelMaster : '' };
}
