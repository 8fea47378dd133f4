// The error registry and docs/API.md list the same codes with the same statuses.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ERROR_CODES, IdmintError } from '../../src/errors.js';

describe('error registry', () => {
  const doc = readFileSync(new URL('../../docs/API.md', import.meta.url), 'utf8');
  const documented = new Map<string, number>();
  for (const m of doc.matchAll(/^\| `([A-Z_]+)` \| (\d{3}) \|/gm)) documented.set(m[1], Number(m[2]));

  it('documents every code with its status, and nothing else', () => {
    assert.ok(documented.size > 5, 'the error table of docs/API.md was not found');
    for (const [code, def] of Object.entries(ERROR_CODES))
      assert.equal(documented.get(code), def.status, `docs/API.md: ${code}`);
    for (const code of documented.keys()) assert.ok(code in ERROR_CODES, `docs/API.md lists unknown code ${code}`);
  });

  it('gives 503 errors a Retry-After and serialises to the wire shape', () => {
    const e = new IdmintError('UNAVAILABLE', 'x');
    assert.equal(e.status, 503);
    assert.equal(e.retryAfter, 1);
    assert.deepEqual(e.toJSON(), { error: { code: 'UNAVAILABLE', message: 'x' } });
    assert.equal(new IdmintError('TAG_NOT_FOUND', 'y').retryAfter, undefined);
  });
});
