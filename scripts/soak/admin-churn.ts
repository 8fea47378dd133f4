// Admin changes during the soak (docs/API.md admin routes): every few seconds a new tag is
// created (segment global, segment node, snowflake, rule, in turn), asked for an ID, changed
// with PATCH, asked again and deleted. Each tag has a new name, as tags come and go in a
// long-lived deployment.
import { setTimeout as sleep } from 'node:timers/promises';
import { adminHeaders } from '../../tools/node.js';
import type { LoadContext } from './load-context.js';
import { APP } from './tags.js';

const BODIES: Record<string, unknown>[] = [
  { mode: 'segment', order: 'global', step: 500 },
  { mode: 'segment', order: 'node', node_block: 200 },
  { mode: 'snowflake' },
  { mode: 'rule', order: 'global', template: 'C{yyyy}{counter:6}', max_counter: 999999, reset_seconds: 0 },
];

const PATCHES: Record<string, unknown>[] = [
  { step: 700, description: 'soak' },
  { node_block: 300 },
  { description: 'soak' },
  { description: 'soak' },
];

export class AdminChurn {
  /** Tags created and deleted. */
  cycles = 0;

  constructor(private readonly ctx: LoadContext) {}

  private async call(method: string, path: string, body: unknown, want: number): Promise<unknown> {
    const res = await fetch(`${this.ctx.at.url}${path}`, {
      method,
      headers: body === undefined ? { authorization: adminHeaders.authorization } : adminHeaders,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(10000),
    });
    const text = await res.text();
    if (res.status !== want)
      throw Object.assign(new Error(`${method} ${path}: ${res.status} ${text.slice(0, 200)}`), { status: res.status });
    return text ? JSON.parse(text) : undefined;
  }

  private async cycle(n: number): Promise<void> {
    const k = n % BODIES.length;
    const tag = `soak-churn-${n}`;
    const idPath = `/v1/id/${tag}${BODIES[k].mode === 'rule' ? `?app=${APP}` : ''}`;
    await this.call('POST', '/v1/admin/tags', { tag, ...BODIES[k] }, 201);
    await this.call('GET', idPath, undefined, 200);
    await this.call('PATCH', `/v1/admin/tags/${tag}`, PATCHES[k], 200);
    await this.call('GET', idPath, undefined, 200);
    await this.call('DELETE', `/v1/admin/tags/${tag}`, undefined, 204);
    this.cycles++;
  }

  async run(everySeconds: number): Promise<void> {
    for (let n = 0; this.ctx.running; n++) {
      const start = performance.now();
      try {
        await this.cycle(n);
      } catch (err) {
        this.ctx.fail(
          'admin',
          String((err as { status?: number }).status ?? (err as Error).name),
          (err as Error).message,
        );
      }
      const left = everySeconds * 1000 - (performance.now() - start);
      // Wakes within a second of the end of the run.
      for (let until = performance.now() + left; this.ctx.running && performance.now() < until; )
        await sleep(Math.min(1000, until - performance.now()));
    }
  }
}
