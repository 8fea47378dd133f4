// Health on /metrics: whether this process is ready (the /readyz checks), and how often a
// Redis server was found replaced: its run id changed between two looks (a restart, with or
// without its data, or a failover to a replica), and which master each one's connection talks
// to now.
import { Counter, Gauge, type Registry } from 'prom-client';

export interface HealthSources {
  readonly ready: () => Promise<boolean>;
  /** Run id of each named Redis server (undefined when it cannot be read now). */
  readonly redisRunIds: () => Promise<{ server: string; runId: string | undefined }[]>;
  /** host:port of the master(s) each server's connection talks to now (none while not connected). */
  readonly redisMasters: () => { server: string; address: string }[];
  /** Names of the Redis servers, so each series exists from the start. */
  readonly redisServers: readonly string[];
}

export function registerHealthMetrics(registry: Registry, src: HealthSources): void {
  const registers = [registry];
  new Gauge({
    name: 'idmint_ready',
    help: 'This process is ready (1) or not (0), as GET /readyz answers',
    registers,
    // Under `serve --processes N`: 0 when any process is not ready.
    aggregator: 'min',
    async collect() {
      this.set((await src.ready().catch(() => false)) ? 1 : 0);
    },
  });
  const seen = new Map<string, string>();
  const changes = new Counter({
    name: 'idmint_redis_run_id_changes_total',
    labelNames: ['server'],
    registers,
    help: 'Times a Redis server answered with another run id than at the previous look (restart or failover); looked at on every scrape',
    async collect() {
      for (const { server, runId } of await src.redisRunIds().catch(() => [])) {
        if (runId === undefined) continue;
        const before = seen.get(server);
        if (before !== undefined && before !== runId) this.inc({ server });
        seen.set(server, runId);
      }
    },
  });
  for (const server of src.redisServers) changes.inc({ server }, 0);
  new Gauge({
    name: 'idmint_redis_master_info',
    labelNames: ['server', 'address'],
    registers,
    help: 'The master each Redis server connection talks to now (host:port as the connection sees it; after a Sentinel failover, the new master): 1 per address',
    // Under `serve --processes N`: one series per address any process talks to.
    aggregator: 'max',
    collect() {
      this.reset();
      for (const { server, address } of src.redisMasters()) this.set({ server, address }, 1);
    },
  });
}
