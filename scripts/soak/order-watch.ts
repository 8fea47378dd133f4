// The real-time order check of one sequential client on an `order: global` tag
// (tools/order.ts), in bounded memory: the answers since the last check are checked together
// with one stand-in for everything before them (the highest ID so far, answered when the last
// of them was), then dropped.
import { realTimeOrder, type Timed } from '../../tools/order.js';

export class OrderWatch {
  private pending: Timed[] = [];
  private carry: Timed | undefined;
  checked = 0;
  violations = 0;
  /** The first violations, for the report. */
  readonly examples: string[] = [];

  constructor(readonly name: string) {}

  /** An answer: its request sent and answered at (performance.now()), its lowest and highest ID. */
  add(sent: number, answered: number, min: bigint, max: bigint): void {
    this.pending.push({ sent, answered, min, max });
  }

  /** Checks the answers added since the last call. */
  flush(): void {
    if (this.pending.length === 0) return;
    const items = this.carry ? [this.carry, ...this.pending] : this.pending;
    const r = realTimeOrder(items, (t) => t);
    this.checked += r.checked;
    this.violations += r.violations.length;
    for (const v of r.violations.slice(0, 3 - this.examples.length))
      this.examples.push(`${this.name}: ${v.itemMin} answered after ${v.earlierMax} had been`);
    let max = this.carry?.max;
    let answered = this.carry?.answered ?? -Infinity;
    for (const t of this.pending) {
      if (max === undefined || t.max > max) max = t.max;
      if (t.answered > answered) answered = t.answered;
    }
    this.carry = { sent: -Infinity, answered, min: max!, max: max! };
    this.pending = [];
  }
}
