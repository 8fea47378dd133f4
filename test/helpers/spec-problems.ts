// What a tag definition is refused for: the problems of the SpecProblems a body throws
// (src/core/tag-spec.ts), for the unit tests of the spec, its settings and its layouts.
import assert from 'node:assert/strict';
import { specFromCreate, SpecProblems } from '../../src/core/tag-spec.js';

/** The problems fn is refused for; fails when it throws anything else or is accepted. */
export function specProblems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof SpecProblems, `expected SpecProblems, got ${String(e)}`);
    assert.equal(e.message, e.problems.join('; '));
    return e.problems;
  }
  assert.fail('the body was accepted');
}

/** The problems a create body is refused for. */
export const createProblems = (body: unknown): string[] => specProblems(() => specFromCreate(body));
