// suite: single — the log output of the command line, no Redis key layout involved
// The log output of `idmint serve` run from the sources: readable lines (pino-pretty) when
// stdout is a real terminal, JSON objects when it is a pipe, and JSON on a terminal too when
// LOG_FORMAT=json. Started without the node flags a server ships with, it logs which it lacks.
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { SERVE_NODE_FLAGS } from '../../src/process/node-flags.js';
import { cleanup, testEnv, testNames } from '../../tools/env.js';
import { fetchIds } from '../../tools/node.js';
import { startServe, withoutNpmVars, type ServeProcess } from '../helpers/serve-process.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SERVE = [process.execPath, '--import', 'tsx', 'src/cli.ts', 'serve'];

const isJson = (line: string) => {
  try {
    return typeof JSON.parse(line) === 'object';
  } catch {
    return false;
  }
};

describe('log format', () => {
  const names = testNames();
  const env = (extra: Record<string, string> = {}) => ({
    ...withoutNpmVars(process.env),
    ...testEnv(names, { DEMO_TAG: 'demo', LOG_LEVEL: 'info', ...extra }),
  });
  const running: ServeProcess[] = [];
  const serve = async (terminal: boolean, extra: Record<string, string> = {}) => {
    const p = await startServe(SERVE, { cwd: ROOT, env: env(extra), terminal });
    running.push(p);
    return p;
  };
  after(async () => {
    for (const p of running) await p.stop();
    await cleanup(names);
  });

  it('prints readable lines on a terminal', async () => {
    const p = await serve(true);
    assert.equal((await fetchIds(p.url, 'demo', 10)).length, 10);
    await p.stop();
    const logs = p.output.filter((l) => !l.startsWith('PID='));
    const listening = logs.find((l) => l.includes('idmint listening'))!;
    assert.match(listening, /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: idmint listening \{/, listening);
    assert.ok(logs.length >= 3, logs.join('\n'));
    for (const l of logs) assert.ok(!isJson(l), `a readable line, not JSON: ${l}`);
    assert.ok(
      logs.some((l) => /INFO: shutting down/.test(l)),
      `the lines logged while stopping are printed too:\n${logs.join('\n')}`,
    );
  });

  it('prints JSON objects, one a line, on a pipe', async () => {
    const p = await serve(false);
    // A request first: the signal handlers are installed just after the listening line.
    assert.equal((await fetchIds(p.url, 'demo', 10)).length, 10);
    await p.stop();
    assert.ok(
      p.output.some((l) => l.includes('shutting down')),
      p.output.join('\n'),
    );
    for (const l of p.output) assert.ok(isJson(l), `JSON: ${l}`);
    // Started without the flags a server ships with (SERVE is bare node): it says which it lacks.
    const warned = p.output.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.missing);
    assert.ok(warned, `a warning of the missing node flags:\n${p.output.join('\n')}`);
    assert.match(String(warned.msg), /^node was started without the flags idmint serves with/);
    assert.deepEqual(warned.missing, [...SERVE_NODE_FLAGS]);
  });

  it('prints JSON on a terminal with LOG_FORMAT=json', async () => {
    const p = await serve(true, { LOG_FORMAT: 'json' });
    assert.equal((await fetchIds(p.url, 'demo', 10)).length, 10);
    await p.stop();
    const logs = p.output.filter((l) => !l.startsWith('PID='));
    assert.ok(logs.length >= 3, logs.join('\n'));
    for (const l of logs) assert.ok(isJson(l), `JSON: ${l}`);
  });
});
