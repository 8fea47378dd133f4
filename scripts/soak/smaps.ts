// How much of a process's resident memory lies in V8's heap pages, read from /proc/<pid>/smaps.
// V8 maps each page of its heap's spaces on its own: an anonymous, read-write mapping of 256 KiB
// (its page size on x64), placed where the system's randomised addresses put it. A page is
// committed whole but resident only as far as it was touched; after a collection that reduces
// memory (V8's memory reducer starts them once the process makes little garbage for a while), the
// sweeper gives the free ranges inside pages back to the system (madvise), and they count again
// only as new objects fill them. So RSS can climb for minutes, page by page, up to the pages
// already mapped, while nothing more is held. `wholeMb` counts every such page whole: RSS were
// every page touched, the level RSS climbs toward, and what grows when something is held.
// Mappings of another size, merged pages among them, stay outside the split (counted as they are
// resident), which only makes `wholeMb` closer to RSS; a mapping of that size that is not V8's
// (a large malloc, say) counts whole. Either way `wholeMb` is never below RSS, and any mapping
// added grows it by at least what it adds to RSS.
import { readFileSync } from 'node:fs';

/** V8's page size on x64 (kPageSize of its heap), bytes. */
export const V8_PAGE_BYTES = 256 * 1024;

export interface ResidentSplit {
  /** RSS, MB (2^20 bytes): the sum of the mappings' Rss. */
  readonly rssMb: number;
  /** What of it lies in V8's pages. */
  readonly v8ResidentMb: number;
  /** V8's pages mapped, touched or not. */
  readonly v8MappedMb: number;
  /** rssMb less v8ResidentMb plus v8MappedMb. */
  readonly wholeMb: number;
}

const HEADER = /^([0-9a-f]+)-([0-9a-f]+) (\S{4}) \S+ \S+ \S+\s*(.*)$/;

/** The split of a smaps text (the contents of /proc/<pid>/smaps). */
export function splitResident(smaps: string): ResidentSplit {
  let rssKb = 0;
  let v8Kb = 0;
  let v8Pages = 0;
  let page = false;
  for (const line of smaps.split('\n')) {
    const h = HEADER.exec(line);
    if (h) {
      const bytes = parseInt(h[2], 16) - parseInt(h[1], 16);
      page = bytes === V8_PAGE_BYTES && h[3].startsWith('rw') && h[4] === '';
      if (page) v8Pages++;
      continue;
    }
    if (!line.startsWith('Rss:')) continue;
    const kb = Number(/^Rss:\s+(\d+) kB/.exec(line)?.[1]);
    if (!Number.isFinite(kb)) throw new Error(`unreadable smaps line: ${line}`);
    rssKb += kb;
    if (page) v8Kb += kb;
  }
  const rssMb = rssKb / 1024;
  const v8ResidentMb = v8Kb / 1024;
  const v8MappedMb = (v8Pages * V8_PAGE_BYTES) / 2 ** 20;
  return { rssMb, v8ResidentMb, v8MappedMb, wholeMb: rssMb - v8ResidentMb + v8MappedMb };
}

/** The split of a running process. */
export function residentSplit(pid: number): ResidentSplit {
  return splitResident(readFileSync(`/proc/${pid}/smaps`, 'utf8'));
}
