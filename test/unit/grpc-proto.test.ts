// The shipped schema is found from the sources and from a compiled copy one or two levels
// deeper (dist/api/grpc, dist/src/api/grpc), and it defines the service the server implements.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { findProtoRoot, idsService } from '../../src/api/grpc/proto.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PROTO = join(ROOT, 'proto');

describe('proto/idmint/v1/ids.proto', () => {
  it('is found from src/ and from a compiled dist/ at either depth', () => {
    assert.equal(findProtoRoot(), PROTO);
    for (const dir of ['src/api/grpc', 'dist/api/grpc', 'dist/src/api/grpc']) {
      assert.equal(findProtoRoot(pathToFileURL(join(ROOT, dir, 'proto.js'))), PROTO, dir);
    }
    assert.throws(() => findProtoRoot(pathToFileURL('/proto.js')), /not found/);
  });

  it('defines idmint.v1.Ids: unary Next and Decode, server-streaming Take', () => {
    const s = idsService();
    assert.deepEqual(Object.keys(s).sort(), ['Decode', 'Next', 'Take']);
    assert.equal(s.Next.path, '/idmint.v1.Ids/Next');
    assert.deepEqual([s.Next.requestStream, s.Next.responseStream], [false, false]);
    assert.deepEqual([s.Take.requestStream, s.Take.responseStream], [false, true]);
    assert.deepEqual([s.Decode.requestStream, s.Decode.responseStream], [false, false]);
  });
});
