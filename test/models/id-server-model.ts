// An executable model of lxyfirst/id_server: how its nodes hand out rule IDs, save counters and
// log, written from its source (files named below are in that repository), not from idmint's
// reading of it. A scenario (config, Lua rules, requests and faults on a timeline) runs to the
// end and leaves what an import would find: the counter table, each node's log and
// config.json, the Lua files, and every ID handed out. Pure and deterministic.
//
// What is modelled, and where it comes from:
// - config.json (id_server/id_server.cpp load_config/load_rules): id_step, id_offset and rules
//   {name, lua_file, batch_save}; rule_manager.cpp clamps batch_save to 1..10000.
// - A counter (id_server/counter_manager.cpp): keyed in memory by get_counter_key, the string
//   rule + "_" + app, so rule "order" app "id_shop" and rule "order_id" app "shop" are one
//   Counter, created (Counter::init) with the names and node offset of whichever pair came
//   first: counter = min_counter + id_offset, update_time 0.
// - generate_counter: counter += id_step; now = generate_time() (max of time(0) and the
//   counter's update_time: it never goes back); if now is not in the update_time's cycle
//   (framework/time_util.h is_same_cycle: (t - timezone) / reset_seconds, glibc's standard
//   offset, false whenever reset_seconds < 1) or counter > max_counter (of the rule the
//   Counter was created for), counter = min_counter + id_offset and saved_counter = counter;
//   update_time = now; when counter >= saved_counter, saved_counter = counter + id_step *
//   batch_save and the counter is queued for saving (async_save).
// - create_id (lua_manager.cpp): DateTime(counter->generate_time()) is localtime_r of that
//   second (DST included) and the requested rule's Lua create_id formats it with the counter.
// - Saving (data_thread_manager.cpp async_save, data_thread.cpp on_event): a full queue logs
//   "save failed rule_name:%s app_name:%s counter:%d" and retries after 10 s with the counter's
//   then-current data; the data thread builds "replace into counter set rule_name='%s',
//   app_name='%s',node_offset=%d,counter=%d,update_time=%d" (counter = saved_counter), logs
//   "exec sql:%s" at debug level (compiled out under NDEBUG) and on failure "db failed
//   thread:%ld errno:%d sql:%s\n" at warn level. Queued saves die with the process; a clean
//   stop runs them first (DataThread::on_fini).
// - Log lines (framework/day_roll_logger.cpp write_format): "%04d-%02d-%02d %02d:%02d:%02d,%s,"
//   in local time, then "[file:line]" unless NDEBUG (day_roll_logger.h), then the message.
// - Restart (data_thread_manager.cpp load_counter_data): "select rule_name,app_name,counter,
//   update_time from counter where node_offset=%d", each row loaded as counter =
//   saved_counter = the row's counter; a row whose key a loaded row already took is skipped
//   (CounterManager::inner_create_counter returns NULL). Rows come in primary key order
//   (deploy/counter.sql: node_offset, rule_name, app_name, a case-insensitive collation).
import { foldName } from '../../src/core/app-fold.js';
import { configText, luaFileOf, luaText } from './id-server-files.js';
import { localFields, logStamp, standardOffsetSec, type Fields } from './zones.js';

export interface RuleConfig {
  readonly name: string;
  readonly min: number;
  readonly max: number;
  readonly reset: number;
  /** The printf format of create_id's string.format, e.g. "O%02d%02d%02d%04d". */
  readonly format: string;
  /** Its arguments after the format: Lua expressions of `now` and `seq`. */
  readonly args: readonly string[];
  /** config.json's batch_save; undefined leaves it out (id_server reads 0, then 1). */
  readonly batchSave: number | undefined;
}

export type IdServerEvent =
  | { readonly dt: number; readonly kind: 'req'; readonly node: number; readonly rule: number; readonly app: number }
  | { readonly dt: number; readonly kind: 'crash' | 'stop' | 'restart' | 'queueFull' | 'drain'; readonly node: number }
  | { readonly dt: number; readonly kind: 'clock'; readonly node: number; readonly delta: number }
  | { readonly dt: number; readonly kind: 'dbDown' | 'dbUp' };

export interface IdServerScenario {
  /** The machine's zone (TZ): id_server's dates and periods. */
  readonly zone: string;
  readonly startMs: number;
  readonly idStep: number;
  /** Nodes, each its id_offset (distinct, below idStep). */
  readonly offsets: readonly number[];
  readonly rules: readonly RuleConfig[];
  readonly apps: readonly string[];
  /** config.json's log_level (2 warn, 3 info, 5 debug) and whether the build defines NDEBUG. */
  readonly logLevel: number;
  readonly ndebug: boolean;
  readonly events: readonly IdServerEvent[];
  /** How each node ends before the import: cleanly or killed. */
  readonly endCrash: readonly boolean[];
  /** Seconds from the later of the last event and the furthest node clock to the import. */
  readonly importDelay: number;
  /**
   * Whether a crash may also lose the first save of a counter's period (queued, or waiting for
   * its retry after a full queue). Such a loss leaves no trace in the table, nor in the data
   * thread's log lines: off unless a test asks for it.
   */
  readonly loseFirstSaves?: boolean;
}

export interface CounterRow {
  readonly nodeOffset: number;
  readonly counter: number;
  readonly updateTime: number;
  readonly ruleName: string;
  readonly appName: string;
}

export interface IssuedRuleId {
  readonly rule: string;
  readonly app: string;
  readonly id: string;
  readonly counter: number;
  /** The second id_server rendered (its generate_time) and its local fields. */
  readonly sec: number;
  readonly fields: Fields;
  readonly node: number;
}

export interface IdServerOutcome {
  readonly rows: readonly CounterRow[];
  readonly logs: readonly { readonly name: string; readonly text: string }[];
  /** config.json of each node, by index. */
  readonly configs: readonly string[];
  readonly lua: Readonly<Record<string, string>>;
  readonly issued: readonly IssuedRuleId[];
  readonly importMs: number;
  /** Whether a counter passed max_counter and started again within a period. */
  readonly wrapped: boolean;
}

interface Counter {
  rule: string;
  app: string;
  counter: number;
  updateTime: number;
  saved: number;
}

interface Save {
  readonly key: string;
  readonly rule: string;
  readonly app: string;
  readonly saved: number;
  readonly updateTime: number;
}

interface Node {
  readonly offset: number;
  up: boolean;
  skewMs: number;
  counters: Map<string, Counter>;
  queue: Save[];
  queueFull: boolean;
  retries: { at: number; key: string }[];
  log: string[];
}

/** Lua's string.format for the conversions the rules use (%d, %0Nd, %%) over the create_id arguments. */
function printf(format: string, values: readonly number[]): string {
  let i = 0;
  return format.replace(/%(%|0?\d*d)/g, (_m, spec: string) => {
    if (spec === '%') return '%';
    const v = values[i++];
    const width = Number(spec.slice(0, -1) || '0');
    return String(v).padStart(width, spec.startsWith('0') ? '0' : ' ');
  });
}

function argValue(arg: string, f: Fields, seq: number): number {
  switch (arg) {
    case 'now:year()':
      return f.year;
    case 'now:year()%10':
      return f.year % 10;
    case 'now:year()%100':
      return f.year % 100;
    case 'now:month()':
      return f.month;
    case 'now:day()':
      return f.day;
    case 'now:hour()':
      return f.hour;
    case 'seq':
      return seq;
  }
  throw new Error(`no value for ${arg}`);
}

const batchOf = (r: RuleConfig): number => Math.min(10_000, Math.max(1, r.batchSave ?? 0));

export function runIdServer(s: IdServerScenario): IdServerOutcome {
  const rules = new Map(s.rules.map((r) => [r.name, r]));
  const table = new Map<string, CounterRow>();
  const issued: IssuedRuleId[] = [];
  const nodes: Node[] = s.offsets.map((offset) => ({
    offset,
    up: false,
    skewMs: 0,
    counters: new Map(),
    queue: [],
    queueFull: false,
    retries: [],
    log: [],
  }));
  let now = s.startMs;
  let dbDown = false;
  let wrapped = false;
  let furthest = now;
  const nodeSec = (n: Node) => Math.floor((now + n.skewMs) / 1000);
  // glibc reads `timezone` once (tzset): the standard offset of the year the process runs in.
  const tz = -standardOffsetSec(s.zone, new Date(s.startMs).getUTCFullYear());
  const sameCycle = (a: number, b: number, reset: number) =>
    reset >= 1 && Math.trunc((a - tz) / reset) === Math.trunc((b - tz) / reset);
  const log = (n: Node, level: number, where: string, msg: string) => {
    if (level > s.logLevel) return;
    const name = ['', 'error', 'warn', 'info', 'trace', 'debug'][level];
    n.log.push(`${logStamp(nodeSec(n), s.zone)},${name},${s.ndebug ? '' : `[${where}]`}${msg}`);
  };

  const push = (n: Node, key: string, c: Counter) => {
    if (n.queueFull) {
      n.queueFull = false;
      log(n, 2, 'data_thread_manager.cpp:118', `save failed rule_name:${c.rule} app_name:${c.app} counter:${c.saved}`);
      n.retries.push({ at: now + 10_000, key });
      return;
    }
    n.queue.push({ key, rule: c.rule, app: c.app, saved: c.saved, updateTime: c.updateTime });
  };
  const drain = (n: Node) => {
    for (const q of n.queue) {
      const sql = `replace into counter set rule_name='${q.rule}',app_name='${q.app}',node_offset=${n.offset},counter=${q.saved},update_time=${q.updateTime}`;
      if (!s.ndebug) log(n, 5, 'data_thread.cpp:96', `exec sql:${sql}`);
      if (dbDown) {
        log(n, 2, 'data_thread.cpp:99', `db failed thread:${1400 + n.offset} errno:2006 sql:${sql}`);
        continue;
      }
      table.set(`${n.offset}|${foldName(q.rule)}|${foldName(q.app)}`, {
        nodeOffset: n.offset,
        counter: q.saved,
        updateTime: q.updateTime,
        ruleName: q.rule,
        appName: q.app,
      });
    }
    n.queue = [];
  };
  // A save is the first of its counter's period when the table holds no row of the same key
  // saved in the same cycle.
  const first = (n: Node, rule: string, app: string, updateTime: number) => {
    const row = table.get(`${n.offset}|${foldName(rule)}|${foldName(app)}`);
    const reset = rules.get(rule)?.reset ?? 0;
    return !row || !sameCycle(row.updateTime, updateTime, reset);
  };
  // A stopped process loses its queue (when killed) and its retry timers (either way); a loss
  // of a period's first save is kept only when the scenario asks for it.
  const halt = (n: Node, killed: boolean) => {
    const keep = killed ? n.queue.filter((q) => !s.loseFirstSaves && first(n, q.rule, q.app, q.updateTime)) : n.queue;
    if (!s.loseFirstSaves) {
      for (const r of n.retries) {
        const c = n.counters.get(r.key);
        if (c && first(n, c.rule, c.app, c.updateTime))
          keep.push({ key: r.key, rule: c.rule, app: c.app, saved: c.saved, updateTime: c.updateTime });
      }
    }
    n.queue = keep;
    drain(n);
    n.up = false;
    n.retries = [];
  };
  const start = (n: Node) => {
    n.up = true;
    n.counters = new Map();
    const mine = [...table.values()].filter((r) => r.nodeOffset === n.offset);
    mine.sort(
      (a, b) => cmp(foldName(a.ruleName), foldName(b.ruleName)) || cmp(foldName(a.appName), foldName(b.appName)),
    );
    for (const r of mine) {
      const key = `${r.ruleName}_${r.appName}`;
      if (n.counters.has(key)) continue;
      n.counters.set(key, {
        rule: r.ruleName,
        app: r.appName,
        counter: r.counter,
        updateTime: r.updateTime,
        saved: r.counter,
      });
    }
  };
  const request = (n: Node, rule: RuleConfig, app: string) => {
    const key = `${rule.name}_${app}`;
    let c = n.counters.get(key);
    if (!c) {
      c = { rule: rule.name, app, counter: rule.min + n.offset, updateTime: 0, saved: rule.min + n.offset };
      n.counters.set(key, c);
    }
    const sec = Math.max(nodeSec(n), c.updateTime);
    // generate_counter runs under the rule the Counter was created for.
    const own = rules.get(c.rule);
    if (!own) return;
    c.counter += s.idStep;
    const same = sameCycle(c.updateTime, sec, own.reset);
    if (same && c.counter > own.max) wrapped = true;
    if (!same || c.counter > own.max) {
      c.counter = own.min + n.offset;
      c.saved = c.counter;
    }
    c.updateTime = sec;
    if (c.counter >= c.saved) {
      c.saved = c.counter + s.idStep * batchOf(own);
      push(n, key, c);
    }
    const fields = localFields(sec, s.zone);
    const id = printf(
      rule.format,
      rule.args.map((a) => argValue(a, fields, c.counter)),
    );
    issued.push({ rule: rule.name, app, id, counter: c.counter, sec, fields, node: s.offsets.indexOf(n.offset) });
    furthest = Math.max(furthest, sec * 1000 + 999);
  };

  for (const n of nodes) start(n);
  for (const e of s.events) {
    now += e.dt * 1000;
    for (const n of nodes) {
      if (!n.up) continue;
      const due = n.retries.filter((r) => r.at <= now);
      n.retries = n.retries.filter((r) => r.at > now);
      for (const r of due) {
        const c = n.counters.get(r.key);
        if (c) push(n, r.key, c);
      }
    }
    if (e.kind === 'dbDown' || e.kind === 'dbUp') {
      dbDown = e.kind === 'dbDown';
      continue;
    }
    const ev = e as Exclude<IdServerEvent, { kind: 'dbDown' | 'dbUp' }>;
    const n = nodes[ev.node % nodes.length];
    switch (ev.kind) {
      case 'req':
        if (!n.up) break;
        {
          // The data thread runs while requests come in: a burst within a second may find saves
          // still queued, but never one of the same counter. With two saves of a counter in
          // flight, a node killed after a restart can be id_step x (batch_save + 1) past its row,
          // past the id_step x batch_save any import assumes (see the report of this model).
          const rule = s.rules[ev.rule % s.rules.length];
          const app = s.apps[ev.app % s.apps.length];
          const key = `${rule.name}_${app}`;
          if (n.queue.length > 0 && (ev.dt > 0 || n.queue.some((q) => q.key === key))) drain(n);
          request(n, rule, app);
        }
        break;
      case 'drain':
        if (n.up) drain(n);
        break;
      case 'crash':
      case 'stop':
        if (n.up) halt(n, ev.kind === 'crash');
        break;
      case 'restart':
        if (!n.up) start(n);
        break;
      case 'queueFull':
        n.queueFull = true;
        break;
      case 'clock':
        n.skewMs += ev.delta * 1000;
        break;
    }
  }
  nodes.forEach((n, i) => {
    if (n.up) halt(n, s.endCrash[i % s.endCrash.length]);
    furthest = Math.max(furthest, now + n.skewMs);
  });
  const importMs = Math.max(now, furthest) + s.importDelay * 1000;
  const rows = [...table.values()].sort(
    (a, b) =>
      a.nodeOffset - b.nodeOffset ||
      cmp(foldName(a.ruleName), foldName(b.ruleName)) ||
      cmp(foldName(a.appName), foldName(b.appName)),
  );
  return {
    rows,
    logs: nodes.map((n, i) => ({ name: `id_server_${i}.log`, text: n.log.map((l) => `${l}\n`).join('') })),
    configs: s.offsets.map((_, i) => configText(s, i)),
    lua: Object.fromEntries(s.rules.map((r) => [luaFileOf(r.name), luaText(r)])),
    issued,
    importMs,
    wrapped,
  };
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
