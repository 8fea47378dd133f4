// What validating a tag definition can report: every problem found, for one INVALID_ARGUMENT
// answer; and the shared lifetime bound for layouts and templates.

/** A snowflake layout or a rule template must stay unique at least this long, unless forced. */
export const MIN_LIFETIME_YEARS = 10;
export { TAG_NAME } from './tag-name.js';

export class SpecProblems extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('; '));
  }
}
