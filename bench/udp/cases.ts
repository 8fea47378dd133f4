// The cases of `npm run bench:udp`: their names (the rows of the table and the keys of the
// recorded run), the server and rule each sends to, and the tags idmint's cases need.
import { createTag } from '../../tools/node.js';

/** Each case's name, by its role in the report. */
export const CASE_NAMES = {
  echo: 'echo (baseline)',
  incr: 'echo + one Redis INCR',
  script: 'echo + one no-op Redis script (EVALSHA)',
  floor: 'echo + the floor of a safe take (EVALSHA)',
  take: "echo + idmint's take (EVALSHA of take-2.lua)",
  node: 'idmint, order node',
  global: 'idmint, order global',
  segment: 'idmint, segment tag, order node',
} as const;

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
    { name: CASE_NAMES.echo, port: t.echo.port, rule: 'o2o', idmint: false, pid: t.echo.pid },
    { name: CASE_NAMES.incr, port: t.incr.port, rule: 'o2o', idmint: false, pid: t.incr.pid },
    { name: CASE_NAMES.script, port: t.script.port, rule: 'o2o', idmint: false, pid: t.script.pid },
    { name: CASE_NAMES.floor, port: t.floor.port, rule: 'o2o', idmint: false, pid: t.floor.pid },
    { name: CASE_NAMES.take, port: t.take.port, rule: 'o2o', idmint: false, pid: t.take.pid },
    { name: CASE_NAMES.node, port: t.idmint.port, rule: 'o2o_node', idmint: true, pid: t.idmint.pid },
    { name: CASE_NAMES.global, port: t.idmint.port, rule: 'o2o_global', idmint: true, pid: t.idmint.pid },
    { name: CASE_NAMES.segment, port: t.idmint.port, rule: 'seg_node', idmint: true, pid: t.idmint.pid },
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
