// The query string of GET /v1/id/:tag as the pre-router path reads it (id-route-spec.ts):
// the route schema's own parameters and limits, or undefined for the router to parse.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ID_QUERY, plainIdQuery } from '../../src/api/http/id-route-spec.js';

describe('plainIdQuery', () => {
  it("reads the route's parameters when nothing needs decoding", () => {
    assert.deepEqual(plainIdQuery('app=shop&salt=a.b_c-d~e'), { app: 'shop', salt: 'a.b_c-d~e' });
    assert.deepEqual(plainIdQuery('key=user-42'), { key: 'user-42' });
    assert.deepEqual(plainIdQuery('app='), { app: '' });
  });

  it('leaves to the router what it would parse or refuse: other names, repeats, escapes, lengths', () => {
    for (const q of [
      '',
      'count=3',
      'app=a&app=b',
      'app=a%20b',
      'app=a+b',
      'app',
      'app=x&',
      '__proto__=x',
      'toString=x',
    ]) {
      assert.equal(plainIdQuery(q), undefined, q);
    }
    for (const [name, spec] of Object.entries(ID_QUERY)) {
      assert.deepEqual(plainIdQuery(`${name}=${'a'.repeat(spec.maxLength)}`), { [name]: 'a'.repeat(spec.maxLength) });
      assert.equal(
        plainIdQuery(`${name}=${'a'.repeat(spec.maxLength + 1)}`),
        undefined,
        `${name} over ${spec.maxLength}`,
      );
    }
  });
});
