// Reads id_server's own log for the counters it tried to save, as evidence, never as commands.
// Its data thread (data_thread.cpp, DataThread::on_event) writes every save as one SQL
// statement, logged before it runs at debug level (only builds without NDEBUG log at debug)
// and again when it fails, at warn level; its logger (day_roll_logger.cpp) puts the local time
// and the level in front, and builds without NDEBUG put "[<source file>:<line>]" after them:
//
//   2024-05-12 10:20:30,debug,[data_thread.cpp:98]exec sql:replace into counter set rule_name='o2o',app_name='test',node_offset=0,counter=5201,update_time=1715480430
//   2024-05-12 10:20:30,warn,db failed thread:1402 errno:2006 sql:replace into counter set rule_name='o2o',app_name='test',node_offset=0,counter=5201,update_time=1715480430
//
// A save that finds the data thread's queue full is not written at all: data_thread_manager.cpp
// (async_save) logs it at warn level with the counter it would have saved and no update_time,
// and the node tries again 10 s later, a try that dies with the process:
//
//   2024-05-12 10:20:30,warn,[data_thread_manager.cpp:118]save failed rule_name:o2o app_name:test counter:5201
//
// Such a save is known by the local time of its line alone (loggedWallMs), and by no node.
//
// Only a whole line of exactly those shapes counts. Other lines log what callers sent (a datagram
// at debug level lands in the log verbatim), so a line that mentions the counter table in any
// other shape, or names a rule or app with a quote in it, is set aside with a note and sets no
// floor. Read line by line, so a log of any size streams through. Pure.
import type { OldCounterRow } from './import-plan.js';

const SAVE =
  /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,(?:debug,(?:\[[^\]\n]*data_thread\.cpp:\d+\])?exec sql:|warn,(?:\[[^\]\n]*data_thread\.cpp:\d+\])?db failed thread:\d+ errno:-?\d+ sql:)replace into counter set rule_name='([^'\n]*)',app_name='([^'\n]*)',node_offset=(-?\d{1,10}),counter=(-?\d{1,10}),update_time=(-?\d{1,10})\r?$/;
const MENTION = 'replace into counter';
const QUEUE_FULL =
  /^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d),warn,(?:\[[^\]\n]*data_thread_manager\.cpp:\d+\])?save failed rule_name:([^ \n]*) app_name:([^ \n]*) counter:(-?\d{1,10})\r?$/;
const QUEUE_FULL_MENTION = 'save failed rule_name:';
/** The earliest instant a local time can be: UTC+14 with two hours of daylight saving. */
const MOST_AHEAD_MS = 16 * 3_600_000;

/**
 * One line of a log: the save it records (a row named "<log>:<line>"), a note when the line
 * mentions the counter table in another shape than id_server's data thread writes (set aside),
 * or undefined for any other line.
 */
export function parseIdServerLogLine(name: string, lineNo: number, line: string): OldCounterRow | string | undefined {
  if (line.includes(QUEUE_FULL_MENTION)) return queueFullSave(name, lineNo, line);
  if (!line.includes(MENTION)) return undefined;
  const match = SAVE.exec(line);
  if (!match)
    return `${name}:${lineNo}: set aside, not a save in the shape id_server's data thread logs: "${line.slice(0, 200)}"`;
  return {
    nodeOffset: Number(match[3]),
    counter: Number(match[4]),
    updateTime: Number(match[5]),
    ruleName: match[1],
    appName: match[2],
    source: `${name}:${lineNo}${line.includes(',warn,') ? ' (db failed)' : ''}`,
  };
}

/**
 * A save that found the queue full: its counter, at the local time of its line (updateTime: the earliest instant that
 * time can be).
 */
function queueFullSave(name: string, lineNo: number, line: string): OldCounterRow | string {
  const match = QUEUE_FULL.exec(line);
  if (!match)
    return `${name}:${lineNo}: set aside, not a failed save in the shape id_server logs it: "${line.slice(0, 200)}"`;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number);
  const wall = Date.UTC(year, month - 1, day, hour, minute, second);
  if (Number.isNaN(wall) || new Date(wall).getUTCDate() !== day)
    return `${name}:${lineNo}: set aside, not a time: "${line.slice(0, 200)}"`;
  return {
    nodeOffset: -1,
    counter: Number(match[9]),
    updateTime: Math.floor((wall - MOST_AHEAD_MS) / 1000),
    loggedWallMs: wall,
    ruleName: match[7],
    appName: match[8],
    source: `${name}:${lineNo} (queue full)`,
  };
}

/** The saves a log holds and the lines set aside, for a log read whole. */
export function readIdServerLog(name: string, text: string): { rows: OldCounterRow[]; setAside: string[] } {
  const rows: OldCounterRow[] = [];
  const setAside: string[] = [];
  text.split('\n').forEach((line, index) => {
    const entry = parseIdServerLogLine(name, index + 1, line);
    if (typeof entry === 'string') setAside.push(entry);
    else if (entry) rows.push(entry);
  });
  return { rows, setAside };
}

/** The saves a log holds (lines set aside are dropped). */
export function parseIdServerLog(name: string, text: string): OldCounterRow[] {
  return readIdServerLog(name, text).rows;
}
