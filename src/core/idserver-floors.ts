// Floors an operator gives to an id_server import, from the command line ("--floor
// <rule>=<counter>" or "<rule>/<app>=<counter>") or the admin route ({"<rule>/<app>": counter}):
// the rule's counters of the current period (of one app and every case of its name, or of
// every app) continue above the id_server counter given. Pure.
import type { OperatorFloor } from './import-plan.js';
import { isValidAppName } from './rule-template.js';

/** The floor of one "<rule>" or "<rule>/<app>" key, or the problem with it. */
export function operatorFloor(key: string, counter: unknown): OperatorFloor | string {
  const value = typeof counter === 'string' && /^\d{1,16}$/.test(counter) ? Number(counter) : counter;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
    return `the floor of "${key}" must be a whole number of 0 or more, got ${JSON.stringify(counter)}`;
  const slash = key.indexOf('/');
  const rule = slash < 0 ? key : key.slice(0, slash);
  const app = slash < 0 ? undefined : key.slice(slash + 1);
  if (rule === '') return `a floor needs a rule name: "<rule>=<counter>" or "<rule>/<app>=<counter>", got "${key}"`;
  if (app !== undefined && !isValidAppName(app))
    return `the floor of "${key}" names app "${app}", not an app name idmint serves ([A-Za-z0-9_.-]{1,64})`;
  return app === undefined ? { rule, counter: value } : { rule, app, counter: value };
}
