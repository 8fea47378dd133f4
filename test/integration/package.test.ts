// suite: single — the build and the packed package
// The build and the published package. `npm pack` (whose prepack step runs `npm run build`)
// makes the tarball; the checkout's dist/ then serves with plain node, and the tarball,
// installed into an empty project, gives a working `npx idmint serve` and `idmint/client`,
// without tsx, TypeScript or pino-pretty (its logs stay JSON on a terminal).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { cleanup, testEnv, testNames } from '../../tools/env.js';
import { fetchIds } from '../../tools/node.js';
import { startServe, withoutNpmVars, type ServeProcess } from '../helpers/serve-process.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  engines: { node: string };
};

/** Runs npm (the one on PATH) and returns what it printed; throws with that on failure. */
function npm(args: string[], cwd: string): string {
  const r = spawnSync('npm', args, { cwd, env: withoutNpmVars(process.env), encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0)
    throw new Error(`npm ${args.join(' ')} failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  return `${r.stdout}\n${r.stderr}`;
}

/** Whether this Node is one package.json's engines declares (written as ">=N"). */
function declaredNode(): boolean {
  const min = /^>=(\d+)$/.exec(PKG.engines.node);
  assert.ok(min, `engines.node is written as >=N: ${PKG.engines.node}`);
  return Number(process.versions.node.split('.')[0]) >= Number(min[1]);
}

const isJson = (line: string) => {
  try {
    return typeof JSON.parse(line) === 'object';
  } catch {
    return false;
  }
};

/** IDs must be distinct and rising (a demo tag: one node, numeric segment IDs). */
function assertRising(ids: bigint[]): void {
  for (let i = 1; i < ids.length; i++) assert.ok(ids[i]! > ids[i - 1]!, `ids rise: ${ids[i - 1]} then ${ids[i]}`);
}

describe('build and package', () => {
  const names = testNames();
  const tmp = mkdtempSync(join(tmpdir(), 'idmint-pack-'));
  const tarball = join(tmp, `${PKG.name}-${PKG.version}.tgz`);
  const app = join(tmp, 'app');
  const env = (extra: Record<string, string> = {}) => {
    const e: NodeJS.ProcessEnv = {
      ...withoutNpmVars(process.env),
      ...testEnv(names, { DEMO_TAG: 'demo', LOG_LEVEL: 'info', ...extra }),
    };
    delete e.NODE_OPTIONS; // nothing may load a TypeScript loader behind the command's back
    return e;
  };
  const running: ServeProcess[] = [];
  const serve = async (command: string[], cwd: string, terminal = false) => {
    const p = await startServe(command, { cwd, env: env(), terminal, timeoutMs: 60_000 });
    running.push(p);
    return p;
  };

  before(() => {
    npm(['pack', '--pack-destination', tmp], ROOT);
    assert.ok(existsSync(tarball), `npm pack wrote ${tarball}`);
  });
  after(async () => {
    for (const p of running) await p.stop();
    await cleanup(names);
    rmSync(tmp, { recursive: true, force: true });
  });

  it('builds dist/, which serves IDs with plain node', async () => {
    for (const asset of [
      'store/redis/commands/take-2.lua',
      'store/redis/commands/includes/server-identity.lua',
      'api/http/admin/page/index.html',
      'client/index.d.ts',
      'cli.js',
    ]) {
      assert.ok(existsSync(join(ROOT, 'dist', asset)), `dist/${asset} is built`);
    }
    const node = await serve([process.execPath, 'dist/cli.js', 'serve'], ROOT);
    const ids = await fetchIds(node.url, 'demo', 500);
    assert.equal(ids.length, 500);
    assertRising(ids);
    const page = await fetch(`${node.url}/admin`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<html/i);
    await node.stop();
  });

  it('installs from the tarball into an empty project: npx idmint serve and idmint/client work', async () => {
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    const printed = npm(['install', '--prefer-offline', '--no-audit', '--no-fund', tarball], app);
    // On a Node version the package declares, neither it nor any dependency objects to it.
    if (declaredNode()) assert.doesNotMatch(printed, /EBADENGINE/, printed);
    for (const dev of ['tsx', 'typescript', 'pino-pretty']) {
      assert.ok(!existsSync(join(app, 'node_modules', dev)), `${dev} is not installed with the package`);
    }
    const node = await serve(['npx', '--no', 'idmint', 'serve'], app);
    writeFileSync(
      join(app, 'take.mjs'),
      `import { IdmintClient } from 'idmint/client';
const client = new IdmintClient({ url: process.argv[2] });
const ids = [await client.id('demo'), ...(await client.ids('demo', 50))];
client.close();
console.log(JSON.stringify(ids.map(String)));
`,
    );
    const r = spawnSync(process.execPath, ['take.mjs', node.url], {
      cwd: app,
      env: env(),
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(r.status, 0, r.stderr);
    const ids = (JSON.parse(r.stdout) as string[]).map(BigInt);
    assert.equal(ids.length, 51);
    assertRising(ids);
    await node.stop();
  });

  it('logs JSON on a terminal when pino-pretty is not installed', async () => {
    assert.ok(existsSync(join(app, 'node_modules/.bin/idmint')), 'the package is installed (previous test)');
    const node = await serve(['node_modules/.bin/idmint', 'serve'], app, true);
    assert.equal((await fetchIds(node.url, 'demo', 5)).length, 5);
    await node.stop();
    const logs = node.output.filter((l) => !l.startsWith('PID='));
    assert.ok(logs.length >= 2, logs.join('\n'));
    for (const l of logs) assert.ok(isJson(l), `JSON: ${l}`);
    // The installed command starts node with the flags a server runs with (node-flags.ts).
    assert.ok(!logs.some((l) => l.includes('without the flags idmint serves with')), logs.join('\n'));
  });
});
