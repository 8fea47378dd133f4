// One load run of a case of `npm run bench:idempotency`: keep-alive clients over loopback
// (autocannon, in this process) against one server for a given time, every answer checked by
// the case's target; answers the latency percentiles, the throughput and the CPU shares of the
// server, this process (the load generator), Redis and the rest of the machine.
import { cpuWindow, machineBusySeconds, readProcs } from '../../tools/cpu.js';
import { autocannon, type AutocannonOptions } from '../load.js';
import type { Server } from '../server.js';

export interface Measured {
  readonly rps: number;
  readonly p50us: number;
  readonly p99us: number;
  readonly serverUsPerReq: number;
  readonly client: number;
  readonly redis: number;
  readonly other: number;
}

const HIST_MAX_US = 200_000;
const pct = (hist: Uint32Array, total: number, q: number): number => {
  const rank = Math.ceil(q * total);
  let seen = 0;
  for (let us = 0; us <= HIST_MAX_US; us++) if ((seen += hist[us]) >= rank) return us;
  return HIST_MAX_US;
};

export interface Target {
  readonly server: Server;
  readonly path: string;
  /** The Idempotency-Key of each request (undefined: none). */
  readonly key: () => string | undefined;
  /** Checks one 2xx body of a connection; answers a problem or undefined. */
  readonly check: (conn: object, body: string) => string | undefined;
}

/** One load run of a case: latency histogram, throughput, CPU of the server, this process, Redis and the rest. */
export async function load(
  t: Target,
  clients: number,
  seconds: number,
  redisPid: number | undefined,
  problems: string[],
  label: string,
): Promise<Measured> {
  const hist = new Uint32Array(HIST_MAX_US + 1);
  let n = 0;
  let conn: object = {};
  let status = 0;
  const p0 = readProcs();
  const b0 = machineBusySeconds();
  const t0 = performance.now();
  const opts: AutocannonOptions & { requests: unknown[] } = {
    url: t.server.url + t.path,
    connections: clients,
    duration: seconds,
    pipelining: 1,
    timeout: 10,
    // Every case builds each request the same way, so the load generator's work is alike.
    requests: [
      {
        setupRequest: (req: { headers?: Record<string, string> }) => {
          const key = t.key();
          return {
            ...req,
            headers: key === undefined ? { ...req.headers } : { ...req.headers, 'idempotency-key': key },
          };
        },
      },
    ],
    verifyBody: (body) => {
      if (status < 200 || status > 299) {
        if (problems.length < 20) problems.push(`${label}: HTTP ${status} ${body.slice(0, 200)}`);
        return true;
      }
      const problem = t.check(conn, body);
      if (problem && problems.length < 20) problems.push(`${label}: ${problem}`);
      return true;
    },
  };
  const res = await new Promise<{ '2xx': number; non2xx: number; errors: number; timeouts: number }>(
    (resolve, reject) => {
      const inst = autocannon(opts, (err, r) => (err ? reject(err) : resolve(r)));
      inst.on('response', (c, s, _b, ms) => {
        conn = c;
        status = s;
        if (s >= 200 && s <= 299) {
          hist[Math.min(HIST_MAX_US, Math.round(ms * 1000))]++;
          n++;
        }
      });
    },
  );
  const wall = (performance.now() - t0) / 1000;
  const cpu = cpuWindow(p0, readProcs(), wall, machineBusySeconds() - b0, t.server.pid, redisPid);
  if (res.non2xx + res.errors + res.timeouts > 0)
    problems.push(`${label}: ${res.non2xx} non-2xx, ${res.errors} errors, ${res.timeouts} timeouts`);
  return {
    rps: res['2xx'] / wall,
    p50us: pct(hist, n, 0.5),
    p99us: pct(hist, n, 0.99),
    serverUsPerReq: ((cpu.server / 100) * wall * 1e6) / Math.max(1, res['2xx']),
    client: cpu.client,
    redis: cpu.redis,
    other: cpu.other,
  };
}
