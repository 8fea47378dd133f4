// The Prometheus alert rules in deploy/prometheus: `promtool check rules` accepts them and
// `promtool test rules` passes (each alert fires on its series and stays quiet on the others).
// promtool comes from Debian's prometheus package (scripts/promtool.sh installs it).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { parse } from 'yaml';

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

  it('give every alert a severity, a summary naming what it is about and a runbook section that exists', () => {
    const doc = parse(readFileSync(new URL('deploy/prometheus/idmint-rules.yml', `file://${ROOT}`), 'utf8')) as {
      groups: { rules: { alert: string; labels?: Record<string, string>; annotations?: Record<string, string> }[] }[];
    };
    // GitHub's anchors: lower case, spaces to dashes, other punctuation dropped.
    const anchors = new Set(
      [...readFileSync(new URL('docs/OPERATIONS.md', `file://${ROOT}`), 'utf8').matchAll(/^#+ (.+)$/gm)].map((m) =>
        m[1]
          .trim()
          .toLowerCase()
          .replace(/[^a-z0-9 -]/g, '')
          .replace(/ /g, '-'),
      ),
    );
    const rules = doc.groups.flatMap((g) => g.rules);
    assert.ok(rules.length >= 10);
    for (const r of rules) {
      assert.match(r.labels?.severity ?? '', /^(critical|warning)$/, r.alert);
      assert.ok(r.annotations?.summary && r.annotations.description, r.alert);
      const m = /^docs\/OPERATIONS\.md#(.+)$/.exec(r.annotations?.runbook_url ?? '');
      assert.ok(
        m && anchors.has(m[1]),
        `${r.alert}: runbook_url ${r.annotations?.runbook_url} names no section of docs/OPERATIONS.md`,
      );
    }
  });
});
