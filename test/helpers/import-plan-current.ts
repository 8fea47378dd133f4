// What an import plan is built from in its tests: the tags idmint holds now (live, deleted,
// their counters and live segments), an old Leaf or Tinyid tag, and how a refused plan reads.
// The segment, id_server and Leaf snowflake plan tests share them.
import assert from 'node:assert/strict';
import { markKey, type Current, type CurrentTag, type OldSegmentTag } from '../../src/core/import-plan.js';
import { SpecProblems } from '../../src/core/spec-problems.js';
import { specFromCreate } from '../../src/core/tag-spec.js';

export const hash = (t: string) => `h(${t})`;
export const none: Current = { live: new Map(), deleted: new Set() };
export const leaf = (tag: string, maxId: string, step = 1000, tokens: OldSegmentTag['tokens'] = []): OldSegmentTag => ({
  tag,
  maxId,
  step,
  description: '',
  stride: 1,
  offset: 0,
  tokens,
});

export function current(tags: CurrentTag[], deleted: string[] = []): Current {
  return { live: new Map(tags.map((t) => [t.spec.tag, t])), deleted: new Set(deleted) };
}

export function existing(
  body: Record<string, unknown>,
  marks: [number, string, number][] = [],
  live: [number, string, number][] = [],
  extra: Partial<CurrentTag> = {},
): CurrentTag {
  return {
    spec: specFromCreate(body),
    epoch: 3,
    counterFloor: 0,
    marks: new Map(marks.map(([s, sc, v]) => [markKey(s, sc), v])),
    lowestLive: new Map(live.map(([s, sc, v]) => [markKey(s, sc), v])),
    tokenHashes: new Set(),
    ...extra,
  };
}

export function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof SpecProblems, String(e));
    return e.message;
  }
  assert.fail('not refused');
}
