// A recorded benchmark run names no path of the machine it ran on: paths in the repository
// become relative, other paths that exist there (a checkout or a file compared against) are
// left out, and route paths stay as they are.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { withoutLocalPaths } from '../../bench/record.js';

describe('recording a benchmark run', () => {
  it('leaves out the paths of the machine, keeps route paths', () => {
    const dir = mkdtempSync(join(tmpdir(), 'idmint-record-'));
    try {
      const file = join(dir, 'take-before.lua');
      writeFileSync(file, '');
      const root = join(dir, 'repo');
      const text = `npm run bench:take -- --also ${file} --out ${root}/bench/x.md; GET /v1/id/:tag and /api/segment/get/leaf; "idmint of ${dir} at abc1234"`;
      assert.equal(
        withoutLocalPaths(text, root),
        'npm run bench:take -- --also <local path> --out bench/x.md; GET /v1/id/:tag and /api/segment/get/leaf; "idmint of <local path> at abc1234"',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
