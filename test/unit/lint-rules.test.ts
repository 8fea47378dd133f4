// The import rule of eslint.config.mjs bites: a file in src/core that imports node:fs fails
// the lint and a pure one passes, and a file in src/api that imports src/store fails, all as
// real files linted with the project's config; the other directions (packages, src/store,
// src/api) are checked on text.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const eslint = new ESLint({ cwd: ROOT });

/** Lints `code` as a real file under `dir` (src/core unless given), removed again whatever happens. */
async function lintProbeFile(code: string, dir = 'src/core'): Promise<ESLint.LintResult> {
  const file = join(ROOT, dir, `lint-probe-${randomUUID()}.ts`);
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
    const r = await lintProbeFile("import { readFileSync } from 'node:fs';\n\nexport const read = readFileSync;\n");
    assert.equal(r.errorCount, 1, JSON.stringify(r.messages));
    assert.equal(r.messages[0].ruleId, 'idmint/layers');
    assert.match(r.messages[0].message, /'node:fs' does I\/O/);
  });

  it('passes a pure file in src/core', async () => {
    const r = await lintProbeFile(
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
    assert.deepEqual(
      await lintText('src/core/probe.ts', "import { inspect } from 'node:util';\nexport const i = inspect;\n"),
      [],
    );
  });

  it('keeps src/store from importing src/api', async () => {
    const [found] = await lintText(
      'src/store/redis/probe.ts',
      "import { buildApp } from '../../api/app.js';\nexport const b = buildApp;\n",
    );
    assert.match(found, /^idmint\/layers: '..\/..\/api\/app.js' is in src\/api/);
    const fromApi = "import { readFileSync } from 'node:fs';\nexport const y = readFileSync;\n";
    assert.deepEqual(await lintText('src/api/probe.ts', fromApi), []);
  });
});

describe('lint: src/api is handed services and imports nothing of src/store', () => {
  const refusal = /^'.*tags-repo.js' is in src\/store: src\/api is handed services, never a store/;

  it('fails a file in src/api that imports a store', async () => {
    const code = `import { TagsRepo } from '../../../store/mysql/tags-repo.js';

export const write = (repo: TagsRepo) => repo.remove('t');`;
    const r = await lintProbeFile(`${code}\n`, 'src/api/http/admin');
    assert.equal(r.errorCount, 1, JSON.stringify(r.messages));
    assert.equal(r.messages[0].ruleId, 'idmint/layers');
    assert.match(r.messages[0].message, refusal);
  });

  it('passes the same write through the door', async () => {
    const code = `import type { TagAdmin } from '../../../service/tag-admin.js';

export const write = (door: TagAdmin) => door.deleteTag('t');`;
    const r = await lintProbeFile(`${code}\n`, 'src/api/http/admin');
    assert.equal(r.errorCount + r.warningCount, 0, JSON.stringify(r.messages));
  });

  it('refuses a store to every folder of src/api, a type-only import, a re-export and a transport too', async () => {
    const repo = 'store/mysql/tags-repo.js';
    for (const [path, code] of [
      ['src/api/probe.ts', `import type { StoredTag } from '../${repo}';\nexport type T = StoredTag;\n`],
      ['src/api/probe.ts', `export { TagsRepo } from '../${repo}';\n`],
      ['src/api/grpc/probe.ts', `import { TagsRepo } from '../../${repo}';\nexport const r = TagsRepo;\n`],
      ['src/api/http/routes/probe.ts', `export const load = () => import('../../../${repo}');\n`],
    ]) {
      const found = await lintText(path, code);
      assert.equal(found.length, 1, `${path}: ${code} -> ${found.join('; ')}`);
      assert.match(found[0].replace(/^idmint\/layers: /, ''), refusal);
    }
  });

  it("keeps the admin's writers behind the door: src/api may not build a tag mover or an importer", async () => {
    for (const file of ['tag-mover', 'importer/importer']) {
      const code = `import { x } from '../../../service/${file}.js';\nexport const y = x;\n`;
      const [found] = await lintText('src/api/http/admin/probe.ts', code);
      assert.match(found, /is not part of the public surface of src\/service/);
    }
  });
});

describe('lint: src/api reaches the service through its surface, and no transport imports another', () => {
  it('fails a transport that imports another transport, and passes what both share below them', async () => {
    const [found] = await lintText(
      'src/api/grpc/probe.ts',
      "import { idsFromRuns } from '../ws/encode.js';\nexport const f = idsFromRuns;\n",
    );
    assert.match(found, /^idmint\/layers: '..\/ws\/encode.js' is in src\/api\/ws: a transport parses/);
    const [fromHttp] = await lintText(
      'src/api/ws/probe.ts',
      "import { idRoutes } from '../http/routes/ids.js';\nexport const r = idRoutes;\n",
    );
    assert.match(fromHttp, /is in src\/api\/http/);
    assert.deepEqual(
      await lintText(
        'src/api/grpc/probe.ts',
        "import { idsFromRuns } from '../../core/id-runs.js';\nimport { openBulkTake } from '../../service/bulk-take.js';\nimport { noteFailure } from '../error-policy.js';\nexport const f = [idsFromRuns, openBulkTake, noteFailure];\n",
      ),
      [],
    );
  });

  it('fails src/api importing a service internal, and passes its public surface', async () => {
    for (const path of ['src/api/probe.ts', 'src/api/udp/probe.ts']) {
      const [found] = await lintText(
        path,
        "import { SourceCache } from '../service/sources.js';\nexport const s = SourceCache;\n".replace(
          '../',
          path.split('/').length > 3 ? '../../' : '../',
        ),
      );
      assert.match(found, /^idmint\/layers: '.*service\/sources.js' is not part of the public surface of src\/service/);
    }
    assert.deepEqual(
      await lintText(
        'src/api/probe.ts',
        "import type { IdService } from '../service/id-service.js';\nexport type S = IdService;\n",
      ),
      [],
    );
  });
});
