// The rule limits the rule template tests compile against: a four-digit counter that resets
// daily, and the same counter never reset.
import type { RuleLimits } from '../../src/core/rule-template.js';

/** Counter 0 to 9999, reset every day. */
export const DAILY: RuleLimits = { minCounter: 0, maxCounter: 9999, resetSeconds: 86_400 };

/** Counter 0 to 9999, never reset. */
export const NEVER: RuleLimits = { minCounter: 0, maxCounter: 9999, resetSeconds: 0 };
