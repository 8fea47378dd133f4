// Reads id_server's own log for the counters it tried to save. Its data thread writes every
// save as one SQL statement, logged before it runs (debug builds: "exec sql:...") and again
// when it fails ("db failed thread:<id> errno:<n> sql:..."), the only trace of a write that
// never reached the counter table (id_server does not retry it). Lines read, e.g.:
//
//   2024-05-12 10:20:30,warn,[data_thread.cpp:98]db failed thread:1402 errno:2006 sql:replace into counter set rule_name='order_id',app_name='test',node_offset=0,counter=5201,update_time=1715480430
//
// (the "[file:line]" part only in builds without NDEBUG). Every other line is ignored; a line
// holding the statement in another shape is refused, so no value is silently skipped. Pure.
import type { OldCounterRow } from './import-plan.js';
import { SpecProblems } from './spec-problems.js';

const STATEMENT = 'replace into counter set ';
const VALUES = /replace into counter set rule_name='(.*?)',app_name='(.*)',node_offset=(-?\d{1,10}),counter=(-?\d{1,10}),update_time=(-?\d{1,10})\s*$/;

/** The saves id_server logged: one row per statement, named "<log>:<line>". */
export function parseIdServerLog(name: string, text: string): OldCounterRow[] {
  const rows: OldCounterRow[] = [];
  const problems: string[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    if (!line.includes(STATEMENT)) return;
    const m = VALUES.exec(line);
    if (!m) {
      problems.push(`${name}:${i + 1}: a counter save not understood: "${line.slice(0, 200)}"`);
      return;
    }
    rows.push({
      nodeOffset: Number(m[3]),
      counter: Number(m[4]),
      updateTime: Number(m[5]),
      ruleName: m[1],
      appName: m[2],
      source: `${name}:${i + 1}${line.includes('db failed') ? ' (db failed)' : ''}`,
    });
  });
  if (problems.length) throw new SpecProblems(problems);
  return rows;
}
