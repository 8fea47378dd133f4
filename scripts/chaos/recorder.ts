// What the chaos campaign writes down: one JSON line per request a client made (when it was
// sent and answered, on one machine-wide monotonic clock, which process slot it went to, the
// IDs or the failure), and the helpers to write and read those files.
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { createInterface } from 'node:readline';

/** Microseconds on CLOCK_MONOTONIC: the same clock in every process of the machine. */
export const nowUs = (): number => Number(process.hrtime.bigint() / 1000n);

/** How a request travelled: HTTP single, HTTP batch, websocket take, UDP get. */
export type Proto = 'hs' | 'hb' | 'ws' | 'udp';

/** Ascending runs of consecutive numeric IDs: [first (decimal), length]. */
export type Runs = [string, number][];

export interface Rec {
  /** Client name (one child process) and loop within it. */
  readonly c: string;
  readonly p: Proto;
  readonly tag: string;
  /** Rule tags: the app whose counter was used. */
  readonly app?: string;
  /** The idmint process slot the request went to (its instance is found from the time). */
  readonly slot: number;
  /** Sent and answered (or failed), µs on the monotonic clock. */
  readonly t0: number;
  readonly t1: number;
  /** IDs asked for. */
  readonly n: number;
  /** Numeric IDs received (segment and snowflake tags), in the order received. */
  readonly r?: Runs;
  /** String IDs received (rule tags). */
  readonly s?: string[];
  /** The error code the service answered with (HTTP/websocket: src/errors.ts; UDP: the UDP code name). */
  readonly err?: string;
  /** No answer: the transport failed (refused, reset, timed out). */
  readonly tr?: string;
  /** An answer that was not well formed (a 200 with the wrong number of IDs, an error without a code). */
  readonly bad?: string;
}

/** Numeric IDs as runs of consecutive values (keeps the files small for batches). */
export function toRuns(ids: readonly bigint[]): Runs {
  const out: Runs = [];
  let first = 0n;
  let len = 0;
  for (const id of ids) {
    if (len > 0 && id === first + BigInt(len)) {
      len++;
      continue;
    }
    if (len > 0) out.push([first.toString(), len]);
    first = id;
    len = 1;
  }
  if (len > 0) out.push([first.toString(), len]);
  return out;
}

export function countRuns(r: Runs): number {
  let n = 0;
  for (const [, len] of r) n += len;
  return n;
}

/** Appends records as JSON lines; end() flushes. */
export class RecordWriter {
  private readonly out: WriteStream;
  private buf: string[] = [];

  constructor(readonly path: string) {
    this.out = createWriteStream(path, { flags: 'w' });
  }

  write(rec: Rec): void {
    this.buf.push(JSON.stringify(rec));
    if (this.buf.length >= 256) this.flush();
  }

  flush(): void {
    if (this.buf.length === 0) return;
    this.out.write(this.buf.join('\n') + '\n');
    this.buf = [];
  }

  end(): Promise<void> {
    this.flush();
    return new Promise((resolve, reject) => {
      this.out.once('error', reject);
      this.out.end(() => resolve());
    });
  }
}

/** Every record of a file, in file order; a torn last line (a killed writer) is skipped. */
export async function* readRecords(path: string): AsyncGenerator<Rec> {
  const rl = createInterface({ input: createReadStream(path), crlfDelay: Infinity });
  for await (const line of rl) {
    if (line === '') continue;
    let rec: Rec;
    try {
      rec = JSON.parse(line) as Rec;
    } catch {
      continue;
    }
    yield rec;
  }
}
