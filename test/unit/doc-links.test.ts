// Every relative link of README.md and docs/*.md points to a file of the repository and, with
// an #anchor, to a heading of that file (GitHub's anchors).
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { describe, it } from 'node:test';

const ROOT = new URL('../../', import.meta.url);

/**
 * GitHub's anchor of a heading: lower case, punctuation but "-" and "_" dropped, spaces to dashes; repeats get -1, -2,
 * ...
 */
function anchors(md: string): Set<string> {
  const out = new Set<string>();
  const count = new Map<string, number>();
  for (const line of md.replace(/^```[\s\S]*?^```/gm, '').split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*#*$/.exec(line);
    if (!m) continue;
    const base = m[1]
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = count.get(base) ?? 0;
    count.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

/** The text without fenced code blocks and code spans (links there are not links). */
const withoutCode = (md: string): string => md.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');

function links(md: string): string[] {
  return [...withoutCode(md).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]);
}

const files = [
  'README.md',
  ...readdirSync(new URL('docs/', ROOT))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

describe('links of README.md and docs/*.md', () => {
  for (const file of files) {
    it(`${file}: every relative link resolves`, () => {
      const here = new URL(file, ROOT);
      const text = readFileSync(here, 'utf8');
      const broken: string[] = [];
      for (const link of links(text)) {
        if (/^[a-z]+:/i.test(link)) continue;
        const [path, anchor] = link.split('#');
        const target = path ? new URL(path, here) : here;
        if (!existsSync(target)) {
          broken.push(`${link}: no such file`);
          continue;
        }
        if (anchor === undefined) continue;
        if (statSync(target).isDirectory() || !target.pathname.endsWith('.md')) {
          broken.push(`${link}: an anchor into a file that is not Markdown`);
          continue;
        }
        if (!anchors(readFileSync(target, 'utf8')).has(anchor)) broken.push(`${link}: no such heading`);
      }
      assert.deepEqual(broken, []);
    });
  }

  it('finds headings as GitHub names them', () => {
    const a = anchors('# A `b` (c)\n## Ordering across processes (`order: global`)\n## x\n## x\n```\n# not\n```\n');
    assert.deepEqual([...a], ['a-b-c', 'ordering-across-processes-order-global', 'x', 'x-1']);
  });
});
