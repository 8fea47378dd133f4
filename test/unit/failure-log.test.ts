// The log line every refusal of the server's fault leaves (api/error-policy.ts noteFailure): one
// JSON object whose keys each appear once, the message under `msg` and the refusal's reason
// under a key of its own.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { noteFailure } from '../../src/api/error-policy.js';
import { IdmintError } from '../../src/errors.js';

/** The keys of a JSON object's text in the order written, repeats kept (JSON.parse keeps only the last). */
function topLevelKeys(line: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
    else if (c === '"') {
      let j = i + 1;
      while (line[j] !== '"') j += line[j] === '\\' ? 2 : 1;
      if (depth === 1 && line[j + 1] === ':') keys.push(line.slice(i + 1, j));
      i = j;
    }
  }
  return keys;
}

describe('failure log lines', () => {
  it('carry each key once: the message as msg, the reason as reason', () => {
    const lines: string[] = [];
    const out = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(...chunk.toString().split('\n').filter(Boolean));
        done();
      },
    });
    const log = pino({ level: 'info' }, out);
    let counted = 0;
    const e = noteFailure('udp', new IdmintError('UNAVAILABLE', 'Redis is unreachable: connect ECONNREFUSED'), log, {
      inc: () => counted++,
    });
    assert.equal(e.code, 'UNAVAILABLE');
    assert.equal(counted, 1);
    assert.equal(lines.length, 1);
    const keys = topLevelKeys(lines[0]);
    assert.deepEqual(
      keys.filter((k, i) => keys.indexOf(k) !== i),
      [],
      `a key repeated: ${lines[0]}`,
    );
    const rec = JSON.parse(lines[0]) as Record<string, unknown>;
    assert.equal(rec.msg, 'request failed');
    assert.equal(rec.reason, 'Redis is unreachable: connect ECONNREFUSED');
    assert.equal(rec.transport, 'udp');
  });
});
