// Every idmint error code has one gRPC status, docs/GRPC.md lists the same table, and a
// status carries the idmint code (metadata and message) and, when retryable, when to retry.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import { GRPC_STATUS } from '../../src/api/error-replies.js';
import { grpcStatus } from '../../src/api/grpc/status.js';
import { ERROR_CODES, IdmintError, type ErrorCode } from '../../src/errors.js';

describe('gRPC statuses of idmint errors', () => {
  const doc = readFileSync(new URL('../../docs/GRPC.md', import.meta.url), 'utf8');
  const documented = new Map<string, string>();
  for (const m of doc.matchAll(/^\| `([A-Z_]+)` \| `([A-Z_]+)` \|/gm)) documented.set(m[1], m[2]);

  it('documents every code with its status, and nothing else', () => {
    assert.ok(documented.size > 5, 'the error table of docs/GRPC.md was not found');
    for (const code of Object.keys(ERROR_CODES) as ErrorCode[])
      assert.equal(documented.get(code), status[GRPC_STATUS[code]], `docs/GRPC.md: ${code}`);
    for (const code of documented.keys()) assert.ok(code in ERROR_CODES, `docs/GRPC.md lists unknown code ${code}`);
  });

  it('puts the idmint code in the trailing metadata and the message, and retry hints on 503s', () => {
    const s = grpcStatus(new IdmintError('UNAVAILABLE', 'Redis is unreachable'));
    assert.equal(s.code, status.UNAVAILABLE);
    assert.equal(s.details, 'UNAVAILABLE: Redis is unreachable');
    assert.deepEqual(s.metadata!.get('idmint-code'), ['UNAVAILABLE']);
    assert.deepEqual(s.metadata!.get('retry-after'), ['1']);
    assert.deepEqual(s.metadata!.get('grpc-retry-pushback-ms'), ['1000']);
    const nf = grpcStatus(new IdmintError('TAG_NOT_FOUND', 'tag "x" does not exist'));
    assert.equal(nf.code, status.NOT_FOUND);
    assert.deepEqual(nf.metadata!.get('retry-after'), []);
  });
});
