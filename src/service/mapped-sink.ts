// A request's take mapped straight to its answer: the waiter's sink (waiter-queue.ts) settles
// the request's promise with what the request's mapper makes of its runs or of its failure, so
// a single ID's request path makes one object where a function per outcome would be made.
import type { Range } from '../core/ranges.js';
import type { WaiterSink } from './waiter-queue.js';

/** What a request makes of its take: of its runs (map), or of the error that failed it (recover). */
export interface RunsMapper<T> {
  map(runs: Range[]): T;
  recover(err: Error): T | Promise<T>;
}

/** A takeMapped request's waiter sink: settles its promise with what its mapper makes. */
export class MappedSink<T> implements WaiterSink {
  constructor(
    private readonly mapper: RunsMapper<T>,
    private readonly resolve: (value: T | Promise<T>) => void,
    private readonly reject: (err: Error) => void,
  ) {}

  served(runs: Range[]): void {
    try {
      this.resolve(this.mapper.map(runs));
    } catch (err) {
      this.reject(err as Error);
    }
  }

  failed(error: Error): void {
    try {
      this.resolve(this.mapper.recover(error));
    } catch (err) {
      this.reject(err as Error);
    }
  }
}
