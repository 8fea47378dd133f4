// How much of a process's RSS lies in V8's heap pages (scripts/soak/smaps.ts): anonymous
// read-write mappings of exactly V8's page size count as its pages, resident or mapped; every
// other mapping counts as it is resident; whatever the mappings, RSS with the pages counted whole
// is never below RSS and a mapping added never grows it by less than it grows RSS (a property
// over generated smaps texts, FUZZ_SEED replays it); and the split of this very process finds
// V8's pages.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { params, SEED } from '../helpers/fuzz-run.js';
import { rssMb } from '../../scripts/soak/sampler.js';
import { residentSplit, splitResident, V8_PAGE_BYTES } from '../../scripts/soak/smaps.js';

/** A smaps entry: its header line, then the lines the kernel writes that the split reads or skips. */
const entry = (start: number, bytes: number, perms: string, name: string, rssKb: number) =>
  [
    `${start.toString(16)}-${(start + bytes).toString(16)} ${perms} 00000000 00:00 0${name ? `          ${name}` : ''}`,
    `Size:           ${bytes / 1024} kB`,
    `Rss:            ${rssKb} kB`,
    `Pss:            ${rssKb} kB`,
    'VmFlags: rd wr mr mw me ac sd',
  ].join('\n');

describe('soak: RSS split by V8 heap pages', () => {
  it("counts anonymous read-write mappings of V8's page size as its pages, and nothing else", () => {
    const base = 0x100000000;
    const page = V8_PAGE_BYTES;
    const text = [
      entry(base, page, 'rw-p', '', 100), // a V8 page, partly touched
      entry(base + 4 * page, page, 'rw-p', '', 256), // a V8 page, touched whole
      entry(base + 8 * page, page, '---p', '', 0), // reserved, not a page in use
      entry(base + 12 * page, page, 'rw-p', '/usr/lib/x.so', 40), // a file's
      entry(base + 16 * page, 2 * page, 'rw-p', '', 300), // another size: counted as it is
      entry(base + 24 * page, 132 * 1024, 'rw-p', '[heap]', 132), // malloc's
      '',
    ].join('\n');
    const s = splitResident(text);
    assert.equal(s.rssMb, (100 + 256 + 0 + 40 + 300 + 132) / 1024);
    assert.equal(s.v8ResidentMb, 356 / 1024);
    assert.equal(s.v8MappedMb, 0.5);
    // RSS less the pages' resident part plus their mapped size: 828 - 356 + 512 kB.
    assert.equal(s.wholeMb, (828 - 356 + 512) / 1024);
    assert.ok(s.wholeMb >= s.rssMb);
  });

  it(`never counts less than RSS, and grows at least as RSS does with any mapping added (seed ${SEED})`, () => {
    const sizes = [4096, 8192, V8_PAGE_BYTES - 4096, V8_PAGE_BYTES, V8_PAGE_BYTES + 4096, 2 * V8_PAGE_BYTES, 8 << 20];
    const mapping = fc.record({
      bytes: fc.constantFrom(...sizes),
      perms: fc.constantFrom('rw-p', 'r--p', '---p', 'rwxp', 'r-xp'),
      name: fc.constantFrom('', '', '[heap]', '[stack]', '/usr/bin/node', '[anon:x]'),
      touched: fc.double({ min: 0, max: 1, noNaN: true }),
    });
    const text = (ms: readonly { bytes: number; perms: string; name: string; touched: number }[]) => {
      let at = 0x10000000;
      return `${ms
        .map((m) => {
          const kb = m.perms === '---p' ? 0 : Math.floor((m.touched * m.bytes) / 4096) * 4;
          const e = entry(at, m.bytes, m.perms, m.name, kb);
          at += m.bytes + V8_PAGE_BYTES;
          return e;
        })
        .join('\n')}\n`;
    };
    fc.assert(
      fc.property(fc.array(mapping, { maxLength: 30 }), mapping, (ms, added) => {
        const before = splitResident(text(ms));
        const after = splitResident(text([...ms, added]));
        const eps = 1e-9;
        assert.ok(before.wholeMb >= before.rssMb - eps, JSON.stringify(before));
        assert.ok(
          after.wholeMb - before.wholeMb >= after.rssMb - before.rssMb - eps,
          JSON.stringify({ before, after }),
        );
        assert.ok(before.v8ResidentMb <= before.v8MappedMb + eps, JSON.stringify(before));
      }),
      params(500),
    );
  });

  it('refuses a smaps text it cannot read', () => {
    assert.throws(
      () => splitResident(`${entry(0x1000, V8_PAGE_BYTES, 'rw-p', '', 1).replace(/Rss: +1 kB/, 'Rss: x kB')}\n`),
      /unreadable smaps line/,
    );
  });

  it('finds the heap pages of this process, and a total RSS near its own', () => {
    const vmRssMb = rssMb(process.pid);
    const s = residentSplit(process.pid);
    assert.ok(Math.abs(s.rssMb - vmRssMb) / vmRssMb < 0.1, `${s.rssMb} against VmRSS ${vmRssMb}`);
    assert.ok(s.v8MappedMb >= 1, JSON.stringify(s));
    assert.ok(s.v8ResidentMb > 0 && s.v8ResidentMb <= s.v8MappedMb, JSON.stringify(s));
    assert.ok(s.wholeMb >= s.rssMb, JSON.stringify(s));
  });
});
