// The script layer without Redis: @include expansion (src/store/redis/lua.ts) on scratch files
// and on the real scripts, and the decoding of every script's replies (replies.ts).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { COMMANDS_DIR, expandIncludes, SCRIPT_FILES, scriptText } from '../../src/store/redis/lua.js';
import {
  decodeAcquire,
  decodeExhaust,
  decodeInstall,
  decodePrime,
  decodeRelease,
  decodeRenew,
  decodeTake,
} from '../../src/store/redis/replies.js';
import { loadedScripts } from '../../src/store/redis/scripts.js';

describe('Lua @include expansion', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idmint-lua-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string): string => {
    const path = join(dir, name);
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, text);
    return path;
  };

  it('replaces each include line by the included file, expanded, once per script', () => {
    file('includes/a.lua', 'local function a() return 1 end\n');
    file('includes/b.lua', '--- @include "a"\nlocal function b() return a() + 1 end\n');
    const main = file(
      'main-1.lua',
      '--[[ header ]]\n--- @include "includes/b"\n--- @include "includes/a.lua"\nreturn b()\n',
    );
    assert.equal(
      expandIncludes(main),
      '--[[ header ]]\nlocal function a() return 1 end\nlocal function b() return a() + 1 end\n\nreturn b()\n',
    );
  });

  it('leaves a script without includes as it is', () => {
    const text = '-- @include "not a directive: two dashes"\nreturn 1\n';
    assert.equal(expandIncludes(file('plain-0.lua', text)), text);
  });

  it('refuses an unknown include, naming the script and the include', () => {
    const main = file('broken-1.lua', 'local x = 1\n--- @include "includes/nope"\nreturn x\n');
    assert.throws(() => expandIncludes(main), /broken-1\.lua: @include "includes\/nope": no such file/);
    file('includes/outer.lua', '--- @include "inner"\n');
    const nested = file('nested-1.lua', '--- @include "includes/outer"\nreturn 1\n');
    assert.throws(() => expandIncludes(nested), /outer\.lua: @include "inner": no such file/);
  });

  it('refuses an include cycle', () => {
    file('includes/x.lua', '--- @include "y"\n');
    file('includes/y.lua', '--- @include "x"\n');
    assert.throws(() => expandIncludes(file('cycle-1.lua', '--- @include "includes/x"\n')), /includes itself/);
  });

  it('fails at load, not in Redis: every script is read and expanded once, and sent by the SHA-1 of what is sent', () => {
    const scripts = loadedScripts();
    assert.deepEqual(Object.keys(scripts), [...SCRIPT_FILES]);
    for (const file of SCRIPT_FILES) {
      const s = scripts[file];
      assert.equal(s.text, scriptText(file), `${file} is sent with its includes expanded`);
      assert.ok(!/@include/.test(s.text), `${file} has no include left`);
      assert.equal(
        s.sha,
        createHash('sha1').update(s.text).digest('hex'),
        `${file}: EVALSHA names the text EVAL sends`,
      );
      assert.equal(s.keys, Number(file.split('-').pop()), `${file}: its number of keys`);
    }
    assert.equal(loadedScripts(), scripts, 'read once per process');
  });

  it('expands the identity read into the six scripts that compare identities, once each', () => {
    assert.deepEqual(
      [...SCRIPT_FILES].sort(),
      readdirSync(COMMANDS_DIR)
        .filter((f) => f.endsWith('.lua'))
        .map((f) => f.slice(0, -4))
        .sort(),
      'every script file is defined',
    );
    for (const s of SCRIPT_FILES) {
      const text = scriptText(s);
      assert.ok(!text.includes('@include'), s);
      const expected = ['take-2', 'idem-takes-4', 'install-2', 'prime-2', 'lease-acquire-1', 'lease-renew-1'].includes(
        s,
      )
        ? 1
        : 0;
      assert.equal(
        text.split('local function serverIdentity()').length - 1,
        expected,
        `${s} defines serverIdentity once`,
      );
      // Calls in the code, not mentions in comments (block comments, then line comments).
      const code = text.replace(/--\[\[[\s\S]*?\]\]/g, '').replace(/--.*$/gm, '');
      const calls = code.split('serverIdentity()').length - 1 - expected;
      assert.equal(calls, expected, `${s} calls serverIdentity ${calls} times`);
      assert.ok(!/INFO', 'server'/.test(text), `${s} does not read INFO server`);
    }
  });
});

describe('script replies', () => {
  it('take: the steady-state integer, and every status of the array reply', () => {
    assert.deepEqual(decodeTake(41, 3), { status: 'ok', gen: '', seg: -1, refillWanted: false, ranges: [[41, 43]] });
    assert.deepEqual(decodeTake([0, 'g', 2, 1, 5, 6, 10, 11], 4), {
      status: 'ok',
      gen: 'g',
      seg: 2,
      refillWanted: true,
      ranges: [
        [5, 6],
        [10, 11],
      ],
    });
    assert.deepEqual(decodeTake([1, 'g', 2, 1], 4), {
      status: 'dry',
      gen: 'g',
      seg: 2,
      refillWanted: true,
      ranges: [],
    });
    assert.deepEqual(decodeTake([2, 'g', 0, 1], 1).status, 'cold');
    assert.deepEqual(decodeTake([3, 'g', 7, 0, 2], 5), {
      status: 'exhausted',
      gen: 'g',
      seg: 7,
      refillWanted: false,
      ranges: [],
      avail: 2,
    });
    assert.deepEqual(decodeTake([4, 'g', 0, 1], 1).status, 'replaced');
    assert.deepEqual(decodeTake([5, '', 0, 0], 1).status, 'moved');
    assert.throws(() => decodeTake([6, 'g', 0, 0], 1), /take-2\.lua answered 6/);
  });

  it('install, exhaust, renew, release: each code, and an unknown one refused', () => {
    assert.deepEqual([1, 2, -1, -2, -3].map(decodeInstall), ['current', 'next', 'reset', 'next-present', 'stale']);
    assert.deepEqual([1, -1].map(decodeExhaust), ['marked', 'stale']);
    assert.deepEqual([1, 0, -1].map(decodePrime), ['created', 'present', 'moved']);
    assert.deepEqual([1, 0, -1].map(decodeRenew), ['extended', 'expired', 'taken']);
    assert.deepEqual([1, 0].map(decodeRelease), ['released', 'not-ours']);
    assert.throws(() => decodeInstall(0), /install-2\.lua answered 0/);
    assert.throws(() => decodePrime(2), /prime-2\.lua answered 2/);
    assert.throws(() => decodeRenew(null), /lease-renew-1\.lua answered null/);
  });

  it('lease-acquire: a leased id, or an exhausted space', () => {
    assert.deepEqual(decodeAcquire([3, 100, 0, 1]), {
      kind: 'leased',
      workerId: 3,
      lastMs: 100,
      guardMs: 0,
      fresh: true,
    });
    assert.deepEqual(decodeAcquire([0, 0, 5, 0]), { kind: 'leased', workerId: 0, lastMs: 0, guardMs: 5, fresh: false });
    assert.deepEqual(decodeAcquire([-1, 0, 5, 0]), { kind: 'exhausted', guardMs: 5, fresh: false });
  });
});
