// Pacing of a load loop: at most `perSecond` rounds a second, the loop sleeping when it is
// ahead; a loop that fell more than a second behind starts again from now instead of
// catching up in a burst.
import { setTimeout as sleep } from 'node:timers/promises';

export class Pace {
  private next = performance.now();
  private readonly gapMs: number;

  constructor(perSecond: number) {
    this.gapMs = 1000 / perSecond;
  }

  async wait(): Promise<void> {
    this.next += this.gapMs;
    const now = performance.now();
    if (this.next > now) await sleep(this.next - now);
    else if (now - this.next > 1000) this.next = now;
  }
}
