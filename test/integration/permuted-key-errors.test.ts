// suite: cluster
// A permuted tag's key stays out of MySQL errors: a statement that fails while writing the tag
// (here a description MySQL refuses as too long, sent past validation straight to the store)
// is thrown without mysql2's `sql`, which holds the values written, the options column with
// the key among them, and would reach the log of an unexpected failure.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Node } from '../../src/process/serve.js';
import { specFromCreate } from '../../src/core/tag-spec.js';
import { cleanup, testNames } from '../../tools/env.js';
import { startLocalNode } from '../../tools/node.js';

/** Every own property of an error and its causes, as text. */
function everything(err: unknown, depth = 0): string {
  if (err === null || typeof err !== 'object' || depth > 5) return String(err);
  const o = err as Record<string, unknown>;
  const parts = Object.getOwnPropertyNames(o).map(
    (k) => `${k}=${k === 'cause' ? everything(o[k], depth + 1) : String(o[k])}`,
  );
  return parts.join(' ');
}

describe('a permuted tag key in MySQL errors', () => {
  const names = testNames();
  let node: Node;

  before(async () => {
    node = await startLocalNode(names);
  });
  after(async () => {
    await node.close();
    await cleanup(names);
  });

  it('a failed write of the tag throws no statement holding the key', async () => {
    const stored = await node.rt.tags.create(specFromCreate({ tag: 'orders', permute: { digits: 10 } }));
    assert.ok(stored.permute, 'the tag is permuted');
    const key = stored.permute.key;
    assert.match(key, /^[0-9a-f]{32}$/);
    const err = await node.rt.tags.update({ ...stored, description: 'x'.repeat(300) }).then(
      () => assert.fail('MySQL took a description of 300 characters'),
      (e: unknown) => e,
    );
    const text = everything(err);
    assert.match(text, /description/, `the error is MySQL's refusal: ${text.slice(0, 300)}`);
    assert.ok(!text.includes(key), `the key in the error: ${text.slice(0, 500)}`);
    assert.equal((await node.rt.tags.get('orders'))?.permute?.key, key, 'the key is unchanged');
  });
});
