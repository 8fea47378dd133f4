// The lease worker tells BullMQ's "could not schedule the next iteration" error from its
// connection errors by the message's start (src/consumer/lease-worker.ts). This fails if the
// installed BullMQ words it otherwise, or no longer reports it as a worker error.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { it } from 'node:test';
import { UNSCHEDULED } from '../../src/consumer/lease-worker.js';

it("BullMQ's worker reports a next iteration it could not add with the message the lease worker looks for", () => {
  const main = createRequire(import.meta.url).resolve('bullmq');
  const worker = readFileSync(join(dirname(main), 'classes', 'worker.js'), 'utf8');
  const reports = [...worker.matchAll(/new Error\(`([^`$]*)/g)].map((m) => m[1]);
  assert.ok(
    reports.some((text) => text.startsWith(UNSCHEDULED)),
    `no worker error starts with "${UNSCHEDULED}": ${reports.join(' | ')}`,
  );
});
