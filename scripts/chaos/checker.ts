// The checker of the chaos campaign, over every recorded request:
//  - duplicates: no ID answered twice per tag (numeric IDs as bigint ranges; rule IDs as
//    strings per (rule, app));
//  - global order (order: global segment tags): an answer holds only IDs above every ID of
//    every answer that arrived before its request was sent, whoever served either;
//  - per-process order (order: node and snowflake tags): the same rule among the answers of
//    one process instance (each restart is a new instance), and every answer ascending;
//  - every failed request carried an error code of the service (src/errors.ts; UDP: the UDP
//    code table). A request that got no answer because its process was SIGKILLed counts as
//    KILLED; any other transport failure is a failure without a code.
import { ERROR_CODES } from '../../src/errors.js';
import { UDP_CODES } from '../../src/core/udp-protocol.js';
import { overlappingRanges, SeenIds } from '../../tools/duplicates.js';
import { realTimeOrder } from '../../tools/order.js';
import type { Rec } from './recorder.js';

export interface InstanceSpan {
  readonly slot: number;
  readonly n: number;
  readonly spawnAt: number;
  readonly deadAt?: number;
}

export interface KillSpan {
  readonly kind: string;
  readonly slot?: number;
  readonly start: number;
  readonly end?: number;
  readonly upAt?: number;
  readonly skipped?: string;
}

export interface TagModes {
  /** order: global segment tags. */
  readonly global: readonly string[];
  /** order: node segment tags and snowflake tags: ordered per process instance. */
  readonly perProcess: readonly string[];
  /** rule tags: unique per (rule, app), no order. */
  readonly rule: readonly string[];
}

export interface Report {
  ids: number;
  requests: number;
  answered: number;
  /** IDs answered more than once. */
  duplicates: number;
  /** Answers that break an ordering rule. */
  orderViolations: number;
  /** Failed requests by code; KILLED: no answer because the process was killed. */
  failures: Record<string, number>;
  /** Failures without a code (including transport failures no kill explains, malformed answers). */
  uncoded: number;
  /** Comparisons made by the order checks (answers that had an earlier answer to stay above). */
  orderChecked: number;
  faults: Record<string, number>;
  examples: string[];
}

interface Answer {
  readonly rec: Rec;
  readonly min: bigint;
  readonly max: bigint;
}

const MAX_EXAMPLES = 20;
/** A transport failure this long after a killed process's successor listened is still the kill's. */
const KILL_GRACE_US = 2_000_000;

const fmt = (r: Rec): string =>
  `${r.c}/${r.p} slot ${r.slot} ${r.tag}${r.app ? `?app=${r.app}` : ''} n=${r.n} sent ${(r.t0 / 1000).toFixed(3)} ms answered ${(r.t1 / 1000).toFixed(3)} ms`;

export class Checker {
  private readonly report: Report = {
    ids: 0,
    requests: 0,
    answered: 0,
    duplicates: 0,
    orderViolations: 0,
    failures: {},
    uncoded: 0,
    orderChecked: 0,
    faults: {},
    examples: [],
  };
  private readonly answers = new Map<string, Answer[]>();
  private readonly ranges = new Map<string, { lo: bigint; hi: bigint; who: Rec }[]>();
  private readonly ruleSeen = new Map<string, SeenIds<string, Rec>>();
  private readonly kinds = new Map<string, 'global' | 'perProcess' | 'rule'>();

  constructor(
    private readonly modes: TagModes,
    private readonly instances: readonly InstanceSpan[],
    private readonly faults: readonly KillSpan[],
  ) {
    for (const t of modes.global) this.kinds.set(t, 'global');
    for (const t of modes.perProcess) this.kinds.set(t, 'perProcess');
    for (const t of modes.rule) this.kinds.set(t, 'rule');
    for (const f of faults) if (!f.skipped) this.report.faults[f.kind] = (this.report.faults[f.kind] ?? 0) + 1;
  }

  private example(s: string): void {
    if (this.report.examples.length < MAX_EXAMPLES) this.report.examples.push(s);
  }

  private fail(code: string): void {
    this.report.failures[code] = (this.report.failures[code] ?? 0) + 1;
  }

  private uncoded(r: Rec, why: string): void {
    this.report.uncoded++;
    this.fail('no code');
    this.example(`failure without an error code: ${why} (${fmt(r)})`);
  }

  add(r: Rec): void {
    const rep = this.report;
    rep.requests++;
    const kind = this.kinds.get(r.tag);
    if (r.bad !== undefined) this.uncoded(r, r.bad);
    if (r.r || r.s) {
      if (r.bad === undefined) rep.answered++;
      if (r.s) this.addRule(r);
      else this.addNumeric(r, kind);
      return;
    }
    if (r.bad !== undefined) return;
    if (r.err !== undefined) {
      const known = r.p === 'udp' ? r.err in UDP_CODES && r.err !== 'SUCCESS' : r.err in ERROR_CODES;
      if (known) this.fail(r.err);
      else this.uncoded(r, `unknown error code ${r.err}`);
      return;
    }
    if (r.tr !== undefined) {
      if (this.killExplains(r)) this.fail('KILLED');
      else this.uncoded(r, `no answer (${r.tr}) and no kill of slot ${r.slot} explains it`);
      return;
    }
    this.uncoded(r, 'neither IDs nor an error');
  }

  private killExplains(r: Rec): boolean {
    for (const f of this.faults) {
      if (f.kind !== 'kill' || f.slot !== r.slot || f.skipped) continue;
      const until = (f.upAt ?? f.end ?? Number.POSITIVE_INFINITY) + KILL_GRACE_US;
      if (r.t1 >= f.start && r.t0 <= until) return true;
    }
    return false;
  }

  private addRule(r: Rec): void {
    const key = `${r.tag}\u0000${r.app ?? ''}`;
    let seen = this.ruleSeen.get(key);
    if (!seen) this.ruleSeen.set(key, (seen = new SeenIds()));
    for (const id of r.s!) {
      this.report.ids++;
      const prev = seen.add(id, r);
      if (prev) {
        this.report.duplicates++;
        this.example(`duplicate rule ID ${id} (${r.tag}, app ${r.app}): first to ${fmt(prev)}, again to ${fmt(r)}`);
      }
    }
  }

  private addNumeric(r: Rec, kind: string | undefined): void {
    let list = this.ranges.get(r.tag);
    if (!list) this.ranges.set(r.tag, (list = []));
    let min: bigint | undefined;
    let max: bigint | undefined;
    let ascending = true;
    for (const [first, len] of r.r!) {
      const lo = BigInt(first);
      const hi = lo + BigInt(len) - 1n;
      this.report.ids += len;
      list.push({ lo, hi, who: r });
      if (max !== undefined && lo <= max) ascending = false;
      if (min === undefined || lo < min) min = lo;
      if (max === undefined || hi > max) max = hi;
    }
    if (min === undefined || max === undefined) return;
    if (!ascending && kind !== undefined) {
      this.report.orderViolations++;
      this.example(`answer not ascending: ${fmt(r)}`);
    }
    if (kind === 'global' || kind === 'perProcess') {
      const group = kind === 'global' ? r.tag : `${r.tag}\u0000${r.slot}\u0000${this.instanceOf(r)}`;
      let g = this.answers.get(group);
      if (!g) this.answers.set(group, (g = []));
      g.push({ rec: r, min, max });
    }
  }

  /** The instance of the slot that answered: the last one spawned before the answer arrived. */
  private instanceOf(r: Rec): number {
    let best = -1;
    let bestAt = -Infinity;
    for (const i of this.instances) {
      if (i.slot === r.slot && i.spawnAt <= r.t1 && i.spawnAt > bestAt) {
        best = i.n;
        bestAt = i.spawnAt;
      }
    }
    return best;
  }

  /** Runs the checks that need every record; returns the report. */
  finish(): Report {
    for (const [tag, list] of this.ranges) this.duplicatesOf(tag, list);
    for (const [group, list] of this.answers) this.realTimeOrder(group.split('\u0000').join(' '), list);
    return this.report;
  }

  private duplicatesOf(tag: string, list: { lo: bigint; hi: bigint; who: Rec }[]): void {
    for (const d of overlappingRanges(list)) {
      this.report.duplicates += Number(d.hi - d.lo + 1n);
      this.example(`duplicate ${tag} IDs ${d.lo}..${d.hi}: first to ${fmt(d.first)}, again to ${fmt(d.again)}`);
    }
  }

  /** For every answer B: every answer A that arrived before B's request was sent holds only IDs below B's. */
  private realTimeOrder(group: string, list: Answer[]): void {
    const { checked, violations } = realTimeOrder(list, (a) => ({
      sent: a.rec.t0,
      answered: a.rec.t1,
      min: a.min,
      max: a.max,
    }));
    this.report.orderChecked += checked;
    for (const v of violations) {
      this.report.orderViolations++;
      this.example(
        `order (${group}): ${fmt(v.item.rec)} got ${v.itemMin}, but ${fmt(v.earlier.rec)} had already got ${v.earlierMax}`,
      );
    }
  }
}

export function problems(r: Report): number {
  return r.duplicates + r.orderViolations + r.uncoded;
}

const list = (m: Record<string, number>): string =>
  Object.entries(m)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');

/** The one summary line. */
export function summaryLine(r: Report): string {
  const failed = Object.values(r.failures).reduce((a, b) => a + b, 0);
  const faults = Object.values(r.faults).reduce((a, b) => a + b, 0);
  return (
    `chaos: ${r.ids} IDs checked in ${r.answered} answers, ${r.duplicates} duplicates, ${r.orderViolations} order violations ` +
    `(${r.orderChecked} ordered pairs checked), failed requests ${failed}${failed ? ` (${list(r.failures)})` : ''}, ` +
    `faults injected ${faults}${faults ? ` (${list(r.faults)})` : ''}`
  );
}
