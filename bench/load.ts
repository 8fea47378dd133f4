// Load runs for the benchmarks: autocannon in this process at C keep-alive connections, with
// every answer checked (constant body, increasing decimal IDs per connection, or rule IDs of a
// pattern) and a microsecond latency histogram.
import { createRequire } from 'node:module';
import { IdList } from '../tools/duplicates.js';

// ---------------------------------------------------------------------------------------------
// autocannon (CommonJS, no bundled types): the part of its programmatic API used here.

export interface AutocannonOptions {
  url: string;
  connections: number;
  duration: number;
  pipelining: number;
  timeout: number;
  /** Requests per second over all connections (absent: as fast as the answers come). */
  overallRate?: number;
  verifyBody?: (body: string) => boolean;
}
export interface AutocannonResult {
  duration: number;
  errors: number;
  timeouts: number;
  mismatches: number;
  non2xx: number;
  resets: number;
  '2xx': number;
  statusCodeStats: Record<string, { count: number }>;
}
export interface AutocannonInstance {
  on(ev: 'response', fn: (client: object, status: number, bytes: number, ms: number) => void): void;
  stop(): void;
}
export type Autocannon = (
  opts: AutocannonOptions,
  cb: (err: Error | null, res: AutocannonResult) => void,
) => AutocannonInstance;
export const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

// ---------------------------------------------------------------------------------------------
// One load run with answer checks and a microsecond latency histogram

const HIST_MAX_US = 200_000;

export interface LoadResult {
  durationS: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** Broken answer checks (wrong body, not increasing on a connection). */
  violations: number;
  examples: string[];
  /** IDs of a numeric 'ids' check (snowflake IDs pass 2^53), in answer order. */
  ids: BigInt64Array;
  /** IDs of a 'strings' check, in answer order. */
  strings: string[];
}

/**
 * constant: every body equals `body`. ids: {"id":"<decimal>"}, increasing per connection
 * (requests on one connection are sequential) and above `above`. strings: {"id":"<s>"} with s
 * matching `pattern` (rule IDs).
 */
export type Check =
  | { kind: 'constant'; body: string }
  | { kind: 'ids'; above: bigint }
  | { kind: 'strings'; pattern: RegExp };

function percentile(hist: Uint32Array, overflow: number[], total: number, q: number): number {
  if (total === 0) return NaN;
  const rank = Math.ceil(q * total);
  let seen = 0;
  for (let us = 0; us <= HIST_MAX_US; us++) {
    seen += hist[us];
    if (seen >= rank) return us / 1000;
  }
  overflow.sort((a, b) => a - b);
  return overflow[Math.min(overflow.length - 1, rank - seen - 1)] / 1000;
}

/**
 * rate: requests per second over all connections (0: each connection sends its next request as soon as its answer is
 * in).
 */
export function runLoad(
  url: string,
  connections: number,
  seconds: number,
  check: Check,
  rate = 0,
): Promise<LoadResult> {
  const hist = new Uint32Array(HIST_MAX_US + 1);
  const overflow: number[] = [];
  let maxUs = 0;
  let latCount = 0;
  const ids = new IdList(1 << 20);
  const strings: string[] = [];
  let violations = 0;
  const examples: string[] = [];
  const lastOnConnection = new WeakMap<object, bigint>();
  // autocannon emits 'response' (with the connection) and then, synchronously, verifyBody
  // (with the body) for the same response; the pair is joined through these two variables.
  let curClient: object = {};
  let curStatus = 0;
  const violation = (msg: string) => {
    violations++;
    if (examples.length < 5) examples.push(msg);
  };
  const verifyBody = (body: string): boolean => {
    if (curStatus < 200 || curStatus > 299) {
      if (examples.length < 5) examples.push(`HTTP ${curStatus}: ${body.slice(0, 200)}`);
      return true; // counted as non-2xx by autocannon
    }
    if (check.kind === 'constant') {
      if (body !== check.body) violation(`unexpected body ${body.slice(0, 100)}`);
      return true;
    }
    if (!body.startsWith('{"id":"') || !body.endsWith('"}')) {
      violation(`unexpected body ${body.slice(0, 100)}`);
      return true;
    }
    const text = body.slice(7, -2);
    if (check.kind === 'strings') {
      if (!check.pattern.test(text)) violation(`id ${text.slice(0, 100)} does not match ${check.pattern}`);
      strings.push(text);
      return true;
    }
    if (!/^[1-9]\d{0,18}$/.test(text)) {
      violation(`not a decimal id: ${body.slice(0, 100)}`);
      return true;
    }
    const id = BigInt(text);
    const prev = lastOnConnection.get(curClient) ?? check.above;
    if (!(id > prev)) violation(`id ${id} after ${prev} on one connection`);
    lastOnConnection.set(curClient, id);
    ids.push(id);
    return true;
  };
  return new Promise((resolve, reject) => {
    const inst = autocannon(
      {
        url,
        connections,
        duration: seconds,
        pipelining: 1,
        timeout: 10,
        verifyBody,
        ...(rate > 0 ? { overallRate: rate } : {}),
      },
      (err, res) => {
        if (err) return reject(err);
        const ok = res['2xx'];
        const statusCodes: Record<string, number> = {};
        for (const [code, v] of Object.entries(res.statusCodeStats)) statusCodes[code] = v.count;
        resolve({
          durationS: res.duration,
          ok,
          non2xx: res.non2xx,
          errors: res.errors,
          timeouts: res.timeouts,
          statusCodes,
          rps: ok / res.duration,
          p50: percentile(hist, overflow, latCount, 0.5),
          p90: percentile(hist, overflow, latCount, 0.9),
          p99: percentile(hist, overflow, latCount, 0.99),
          max: maxUs / 1000,
          violations,
          examples,
          ids: ids.values,
          strings,
        });
      },
    );
    inst.on('response', (client, status, _bytes, ms) => {
      curClient = client;
      curStatus = status;
      if (status < 200 || status > 299) return;
      const us = Math.round(ms * 1000);
      if (us > maxUs) maxUs = us;
      if (us <= HIST_MAX_US) hist[us]++;
      else overflow.push(us);
      latCount++;
    });
  });
}

export function maxOf(xs: BigInt64Array, floor: bigint): bigint {
  let m = floor;
  for (const x of xs) if (x > m) m = x;
  return m;
}
