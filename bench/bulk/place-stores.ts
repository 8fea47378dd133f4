// The stores idmint talks to (the Redis and MySQL servers of REDIS_URL and MYSQL_URL, when they
// run on this machine) placed on one CPU for a run of bench:bulk-single, and given back the CPUs
// they had at its end. Left to the scheduler, a store runs wherever a CPU is least busy: beside
// a bulk consumer that keeps the clients' CPU full, that is the servers' CPU, where each of its
// wakes takes idmint's core for a while; alone, the clients' CPU, which is mostly idle. So the
// case beside bulk paid for the stores and the case alone did not. Placed on the clients' CPU,
// every case finds them there, as a deployment whose stores run on machines of their own would.
import { affinityOf, setAffinity } from '../../tools/cpu.js';
import { listeningPid } from '../../tools/listener.js';

export interface PlacedStores {
  /** What was placed where, or why a store was not ("Redis (pid 12) on CPU 0"). */
  readonly said: string[];
  /** Gives every placed store back the CPUs it had. */
  restore(): void;
}

/** The port of a store's URL on this machine, or undefined when it is elsewhere. */
function localPort(url: string | undefined, fallback: number): number | undefined {
  if (url === undefined || url === '') return undefined;
  const u = new URL(url);
  const local = ['127.0.0.1', 'localhost', '[::1]', '::1'].includes(u.hostname);
  return local ? Number(u.port || fallback) : undefined;
}

export function placeStores(env: Record<string, string | undefined>, cpu: number): PlacedStores {
  const said: string[] = [];
  const undo: [pid: number, list: string][] = [];
  const stores: [name: string, port: number | undefined][] = [
    ['Redis', env.REDIS_CLUSTER_NODES ? undefined : localPort(env.REDIS_URL, 6379)],
    ['MySQL', localPort(env.MYSQL_URL, 3306)],
  ];
  for (const [name, port] of stores) {
    const pid = port === undefined ? undefined : listeningPid(port);
    const before = pid === undefined ? undefined : affinityOf(pid);
    if (pid === undefined || before === undefined) {
      said.push(
        `${name} not placed (${port === undefined ? 'not on this machine' : `no process of port ${port} this bench can see`})`,
      );
      continue;
    }
    if (!setAffinity(pid, String(cpu))) {
      said.push(`${name} (pid ${pid}) not placed: taskset refused`);
      continue;
    }
    undo.push([pid, before]);
    said.push(`${name} (pid ${pid}) on CPU ${cpu}`);
  }
  let restored = false;
  const restore = (): void => {
    if (restored) return;
    restored = true;
    for (const [pid, list] of undo) setAffinity(pid, list);
  };
  // The stores are shared with the rest of the machine: give them back however the run ends.
  process.once('exit', restore);
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      restore();
      process.kill(process.pid, signal);
    });
  return { said, restore };
}
