// The cases of `npm run bench:udp`: their names (the rows of the table and the keys of the
// recorded run), the server and rule each sends to, and the tags idmint's cases need.
import { createTag } from '../../tools/node.js';

export const ECHO_CASE = 'echo (baseline)';
export const INCR_CASE = 'echo + one Redis INCR';
export const SCRIPT_CASE = 'echo + one no-op Redis script (EVALSHA)';
export const FLOOR_CASE = 'echo + the floor of a safe take (EVALSHA)';
export const TAKE_CASE = "echo + idmint's take (EVALSHA of take-2.lua)";
export const NODE_CASE = 'idmint, order node';
export const GLOBAL_CASE = 'idmint, order global';
export const SEGMENT_CASE = 'idmint, segment tag, order node';

export interface Case {
  readonly name: string;
  readonly port: number;
  /** The rule (app) the clients ask for: a tag of idmint, anything for a baseline server. */
  readonly rule: string;
  /** An idmint case: its IDs are checked. */
  readonly idmint: boolean;
  /** The serving process. */
  readonly pid: number | undefined;
}

/** The servers under test: each baseline's UDP port and process, and idmint's. */
export interface Targets {
  readonly echo: { port: number; pid: number | undefined };
  readonly incr: { port: number; pid: number | undefined };
  readonly script: { port: number; pid: number | undefined };
  readonly floor: { port: number; pid: number | undefined };
  readonly take: { port: number; pid: number | undefined };
  readonly idmint: { port: number; pid: number | undefined };
}

/** Every case, in the order each round runs them. */
export function udpCases(t: Targets): Case[] {
  return [
    { name: ECHO_CASE, port: t.echo.port, rule: 'o2o', idmint: false, pid: t.echo.pid },
    { name: INCR_CASE, port: t.incr.port, rule: 'o2o', idmint: false, pid: t.incr.pid },
    { name: SCRIPT_CASE, port: t.script.port, rule: 'o2o', idmint: false, pid: t.script.pid },
    { name: FLOOR_CASE, port: t.floor.port, rule: 'o2o', idmint: false, pid: t.floor.pid },
    { name: TAKE_CASE, port: t.take.port, rule: 'o2o', idmint: false, pid: t.take.pid },
    { name: NODE_CASE, port: t.idmint.port, rule: 'o2o_node', idmint: true, pid: t.idmint.pid },
    { name: GLOBAL_CASE, port: t.idmint.port, rule: 'o2o_global', idmint: true, pid: t.idmint.pid },
    { name: SEGMENT_CASE, port: t.idmint.port, rule: 'seg_node', idmint: true, pid: t.idmint.pid },
  ];
}

/** The rule tags of order node and global (id_server's template) and the segment tag, on idmint at httpUrl. */
export async function createUdpTags(httpUrl: string): Promise<void> {
  for (const order of ['node', 'global'] as const) {
    const tag = `o2o_${order}`;
    // Six counter digits: the id_server template, wide enough for the IDs of a run.
    await createTag(httpUrl, {
      tag,
      mode: 'rule',
      order,
      template: '{year%10}{MM}{dd}{counter:6}',
      min_counter: 0,
      max_counter: 999_999,
      reset_seconds: 86400,
      step: 10000,
      min_step: 1000,
      node_block: 1000,
    });
  }
  // A segment tag answers its plain IDs; the app name and salt apply to rule tags only.
  await createTag(httpUrl, { tag: 'seg_node', order: 'node' });
}
