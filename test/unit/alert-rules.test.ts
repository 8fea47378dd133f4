// The Prometheus alert rules in deploy/prometheus: `promtool check rules` accepts them and
// `promtool test rules` passes (each alert fires on its series and stays quiet on the others).
// promtool comes from Debian's prometheus package (scripts/promtool.sh installs it).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PROMTOOL = process.env.PROMTOOL || 'promtool';

function promtool(...args: string[]): { status: number | null; output: string } {
  const r = spawnSync(PROMTOOL, args, { cwd: ROOT, encoding: 'utf8' });
  if (r.error) throw new Error(`${PROMTOOL} cannot run (${r.error.message}): run scripts/promtool.sh`);
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

describe('alert rules', () => {
  it('pass promtool check rules', () => {
    const r = promtool('check', 'rules', 'deploy/prometheus/idmint-rules.yml');
    assert.equal(r.status, 0, r.output);
    assert.match(r.output, /SUCCESS: \d+ rules found/);
  });

  it('pass promtool test rules on firing and quiet series', () => {
    const r = promtool('test', 'rules', 'deploy/prometheus/idmint-rules.test.yml');
    assert.equal(r.status, 0, r.output);
    assert.match(r.output, /SUCCESS/);
  });
});
