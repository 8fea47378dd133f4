// The tags the soak serves: one of each mode and order, created once at the start. Rule IDs are
// `{yyyy}{counter:10}` with one app and no reset, so they are decimal integers that grow with
// the counter and are checked like the others (as runs of bigints).

export type Mode = 'segment' | 'snowflake' | 'rule';

export interface SoakTag {
  readonly tag: string;
  readonly mode: Mode;
  /** Whether every answer lies above every answer that arrived before its request was sent. */
  readonly ordered: boolean;
  readonly body: Record<string, unknown>;
}

/** The app of the rule tags (HTTP `app`, UDP `app_name`, gRPC and websocket `app`). */
export const APP = 'soak';

const rule = (order: 'global' | 'node') => ({
  mode: 'rule',
  order,
  template: '{yyyy}{counter:10}',
  min_counter: 1,
  max_counter: 9999999999,
  reset_seconds: 0,
});

export const TAGS: readonly SoakTag[] = [
  { tag: 'soak-seg-global', mode: 'segment', ordered: true, body: { mode: 'segment', order: 'global' } },
  { tag: 'soak-seg-node', mode: 'segment', ordered: false, body: { mode: 'segment', order: 'node' } },
  { tag: 'soak-snowflake', mode: 'snowflake', ordered: false, body: { mode: 'snowflake' } },
  { tag: 'soak-rule-global', mode: 'rule', ordered: true, body: rule('global') },
  { tag: 'soak-rule-node', mode: 'rule', ordered: false, body: rule('node') },
];
