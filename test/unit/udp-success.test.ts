// The success reply written straight from the request (udp-success.ts) against the general
// encoder: the same text for every accepted request, whatever fields it echoes, in whatever
// order they were sent, with whatever values.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ECHOED_FIELDS, encodeReply, parseRequest, successReply } from '../../src/core/udp-protocol.js';
import { successText } from '../../src/core/udp-success.js';
import { rng, SEED, type Rng } from '../../tools/prng.js';

const general = (text: string, id: string): string | undefined => {
  const r = parseRequest(Buffer.from(text));
  return r.ok ? encodeReply(successReply(r.req, id)).toString('utf8') : undefined;
};
const fast = (text: string, id: string): string | undefined => {
  const r = parseRequest(Buffer.from(text));
  return r.ok ? successText(r.req, id) : undefined;
};

const VALUES = [
  '"x"',
  '""',
  '"a\\"b"',
  '"\\u00e9"',
  '"\\ud83d\\ude00"',
  '"\\ud800"',
  '"\\n\\t"',
  '7',
  'null',
  'true',
  '[1,"2"]',
  '{"a":1}',
  '1e20',
];

function request(r: Rng): string {
  const fields = [
    `"action":${r.pick(['"get"', '"create"'])}`,
    '"rule_name":"o2o"',
    `"app_name":${r.pick(['"a"', '"app.1"'])}`,
  ];
  if (r.next() < 0.5) fields.push(`"salt":${r.pick(['"u1"', '""', 'null'])}`);
  for (const k of ['seq', 'token', 'idempotency_key', 'pad', 'data', 'code', 'message'])
    if (r.next() < 0.4) fields.push(`"${k}":${r.pick(VALUES)}`);
  for (let i = fields.length - 1; i > 0; i--) {
    const j = r.int(0, i);
    [fields[i], fields[j]] = [fields[j], fields[i]];
  }
  return `{${fields.join(',')}}`;
}

describe('udp: the success reply written straight from the request', () => {
  it('is the general encoder text for a request carrying every echoed field as a string', () => {
    const fields = ECHOED_FIELDS.map(
      (k) => `"${k}":${k === 'action' ? '"get"' : k === 'rule_name' ? '"o2o"' : `"${k[0]}1"`}`,
    );
    const text = `{${fields.reverse().join(',')}}`;
    const want = general(text, '505140001');
    assert.ok(want !== undefined, 'the request was refused');
    for (const k of ECHOED_FIELDS) assert.ok(want.includes(`"${k}":`), `${k} is not echoed`);
    assert.equal(fast(text, '505140001'), want);
  });

  it('is the general encoder text for random requests and IDs', () => {
    const r = rng(SEED);
    let compared = 0;
    for (let i = 0; i < 3000; i++) {
      const text = request(r);
      const id = r.pick(['1', '505140001', 'F2611270000001', 'a"b\\c', '\u00e9x']);
      const want = general(text, id);
      if (want === undefined) continue;
      compared++;
      assert.equal(fast(text, id), want, `seed ${SEED}, request ${text}`);
    }
    assert.ok(compared > 2000, `only ${compared} requests were accepted`);
  });
});
