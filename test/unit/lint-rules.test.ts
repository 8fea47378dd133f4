// The import rule of eslint.config.mjs bites: a file in src/core that imports node:fs fails
// the lint and a pure one passes, both as real files under src/core linted with the project's
// config; the other directions (packages, src/store, src/api) are checked on text.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const eslint = new ESLint({ cwd: ROOT });

/** Lints `code` as a real file under src/core, removed again whatever happens. */
async function lintCoreFile(code: string): Promise<ESLint.LintResult> {
  const file = join(ROOT, 'src/core', `lint-probe-${randomUUID()}.ts`);
  after(() => rmSync(file, { force: true }));
  try {
    writeFileSync(file, code);
    const [result] = await eslint.lintFiles([file]);
    return result;
  } finally {
    rmSync(file, { force: true });
  }
}

async function lintText(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(ROOT, path) });
  return result.messages.map((m) => `${m.ruleId}: ${m.message}`);
}

describe('lint: src/core does no I/O', () => {
  it('fails a file in src/core that imports node:fs', async () => {
    const r = await lintCoreFile("import { readFileSync } from 'node:fs';\n\nexport const read = readFileSync;\n");
    assert.equal(r.errorCount, 1, JSON.stringify(r.messages));
    assert.equal(r.messages[0].ruleId, 'idmint/layers');
    assert.match(r.messages[0].message, /'node:fs' does I\/O/);
  });

  it('passes a pure file in src/core', async () => {
    const r = await lintCoreFile(
      "import type { ErrorCode } from '../errors.js';\nimport { MAX_COUNTER } from './layout.js';\n\nexport const limit = (code: ErrorCode): [ErrorCode, number] => [code, MAX_COUNTER];\n",
    );
    assert.equal(r.errorCount + r.warningCount, 0, JSON.stringify(r.messages));
  });

  it('refuses I/O packages, other Node built-ins that do I/O and folders outside src/core', async () => {
    for (const code of [
      "import { Redis } from 'ioredis';\nexport const r = Redis;\n",
      "import type { Pool } from 'mysql2/promise';\nexport type P = Pool;\n",
      "import { createSocket } from 'dgram';\nexport const s = createSocket;\n",
      "export const load = () => import('node:child_process');\n",
      "export { keys } from '../store/redis/keys.js';\n",
      "import { IdmintError } from '../errors.js';\nexport const e = IdmintError;\n",
    ]) {
      const found = await lintText('src/core/probe.ts', code);
      assert.equal(found.length, 1, `${code} -> ${found.join('; ')}`);
      assert.match(found[0], /^idmint\/layers: /);
    }
    assert.deepEqual(await lintText('src/core/probe.ts', "import { inspect } from 'node:util';\nexport const i = inspect;\n"), []);
  });

  it('keeps src/store from importing src/api, which may use both', async () => {
    const [found] = await lintText('src/store/redis/probe.ts', "import { buildApp } from '../../api/app.js';\nexport const b = buildApp;\n");
    assert.match(found, /^idmint\/layers: '..\/..\/api\/app.js' is in src\/api/);
    assert.deepEqual(
      await lintText(
        'src/api/probe.ts',
        "import { readFileSync } from 'node:fs';\nimport { x } from '../store/redis/keys.js';\nexport const y = [readFileSync, x];\n",
      ),
      [],
    );
  });
});

describe('lint: src/api reaches the service through its surface, and no transport imports another', () => {
  it('fails a transport that imports another transport, and passes what both share below them', async () => {
    const [found] = await lintText('src/api/grpc/probe.ts', "import { idsFromRuns } from '../ws/encode.js';\nexport const f = idsFromRuns;\n");
    assert.match(found, /^idmint\/layers: '..\/ws\/encode.js' is in src\/api\/ws: a transport parses/);
    const [fromRoutes] = await lintText('src/api/ws/probe.ts', "import { idRoutes } from '../routes/ids.js';\nexport const r = idRoutes;\n");
    assert.match(fromRoutes, /is in src\/api\/routes/);
    assert.deepEqual(
      await lintText(
        'src/api/grpc/probe.ts',
        "import { idsFromRuns } from '../../core/id-runs.js';\nimport { openBulkTake } from '../../service/bulk-take.js';\nimport { noteFailure } from '../errors.js';\nexport const f = [idsFromRuns, openBulkTake, noteFailure];\n",
      ),
      [],
    );
  });

  it('fails src/api importing a service internal, and passes its public surface', async () => {
    for (const path of ['src/api/probe.ts', 'src/api/udp/probe.ts']) {
      const [found] = await lintText(
        path,
        "import { SourceCache } from '../service/sources.js';\nexport const s = SourceCache;\n".replace('../', path.split('/').length > 3 ? '../../' : '../'),
      );
      assert.match(found, /^idmint\/layers: '.*service\/sources.js' is not part of the public surface of src\/service/);
    }
    assert.deepEqual(await lintText('src/api/probe.ts', "import type { IdService } from '../service/id-service.js';\nexport type S = IdService;\n"), []);
  });
});
