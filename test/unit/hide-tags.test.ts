// metrics/hide-tags.ts: the samples of hidden tags are left out of the exposition text, by the
// `tag` label wherever it stands among the labels; comments and other samples stay.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { withoutTags } from '../../src/metrics/hide-tags.js';

const TEXT = [
  '# HELP idmint_ids_issued_total IDs issued',
  '# TYPE idmint_ids_issued_total counter',
  'idmint_ids_issued_total{tag="hush",mode="segment"} 3',
  'idmint_ids_issued_total{mode="segment",tag="loud"} 3',
  'idmint_errors_total{code="X",tag="hush"} 1',
  'idmint_requests_total{route="/v1/ids/:tag"} 9',
  'idmint_up 1',
].join('\n');

describe('withoutTags', () => {
  it('leaves out the samples of hidden tags only', () => {
    assert.equal(
      withoutTags(TEXT, new Set(['hush'])),
      [
        '# HELP idmint_ids_issued_total IDs issued',
        '# TYPE idmint_ids_issued_total counter',
        'idmint_ids_issued_total{mode="segment",tag="loud"} 3',
        'idmint_requests_total{route="/v1/ids/:tag"} 9',
        'idmint_up 1',
      ].join('\n'),
    );
    assert.equal(withoutTags(TEXT, new Set()), TEXT);
  });

  it('leaves out every tagged sample when the hidden tags are unknown', () => {
    const out = withoutTags(TEXT, undefined);
    assert.doesNotMatch(out, /tag="/);
    assert.match(out, /idmint_up 1/);
  });
});
