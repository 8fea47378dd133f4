// Planning an import from Leaf's snowflake mode: an idmint snowflake tag whose every ID lies
// above every ID Leaf's snowflake could have handed out up to the import. Leaf keeps no store
// of what it issued (its IDs come from each node's clock, a ZooKeeper worker id and a
// sequence), so the plan rests on what bounds them:
//
//   Leaf's ID = (ms - twepoch) << (worker_bits + seq_bits) | worker << seq_bits | seq
//
// (SnowflakeIDGenImpl: 10 worker bits, 12 sequence bits, twepoch 1288834974657 unless a fork
// changed them; a new millisecond starts its sequence at a random 0..99, a worker id is below
// 2^worker_bits). The largest ID Leaf could issue with its clock at or before t is therefore
// ((t - twepoch + 1) << low) - 1, whatever its worker ids and sequence starts were (or'ed
// with 127 for a split with fewer than 7 low bits, where the random start is not masked).
//
// idmint's tag keeps Leaf's bit split and millisecond unit and takes the epoch
// twepoch - skew - 1 ms (more below 7 low bits): its smallest ID at its own time t (worker 0,
// sequence 0) is (t - twepoch + skew + 1) << low, above Leaf's largest at any Leaf clock up to t + skew. So
// the guarantee is a fixed shift, the same at every instant: it holds for any idmint clock
// that is behind no Leaf node's last clock reading by more than the skew allowance. The split
// is kept so that IDs stay within 63 bits exactly as long as Leaf's would have, and keep the
// shape clients may decode; the time field is as wide as Leaf's, so the tag runs out `skew`
// earlier than Leaf would have. Pure.
import { clash, specOf, type Current, type ImportPlan, type TagPlan } from './import-plan.js';
import { encode, layoutProblems, runsOutAt, toUnits, type SnowflakeLayout } from './snowflake-layout.js';
import { SpecProblems, TAG_NAME } from './spec-problems.js';
import { specOfMode } from './tag-kinds.js';
import { TAG_NAME_CHARS } from './tag-name.js';

/** Leaf's default twepoch (2010-11-04T01:42:54.657Z), Twitter's. */
export const LEAF_TWEPOCH_MS = 1288834974657;
/** Leaf's layout: 41 time bits (its time is not masked: 63 - 22), 10 worker bits, 12 sequence bits. */
export const LEAF_LAYOUT = { timeBits: 41, workerBits: 10, seqBits: 12 } as const;
/**
 * How far a Leaf node's clock may have been ahead of idmint's clocks, by default: a day. Leaf
 * checks a node's clock only against its own last report in ZooKeeper, never against other
 * machines, so a node whose clock was wrong served with it. The common wrong clock is a
 * hardware clock kept in local time and read as UTC: off by the zone's offset, at most 14
 * hours. A day covers that with room, and costs a day of a range that lasts decades.
 */
export const DEFAULT_CLOCK_SKEW_MS = 86_400_000;
/** The largest allowance taken: a year. */
export const MAX_CLOCK_SKEW_MS = 31_536_000_000;

export interface LeafBits {
  readonly timeBits: number;
  readonly workerBits: number;
  readonly seqBits: number;
}

export interface LeafSnowflakeImport {
  /** The idmint tag: the key Leaf's clients send (/api/snowflake/get/<key>). */
  readonly tag: string;
  /** Leaf's twepoch (ms since 1970); Leaf's default when absent. */
  readonly twepochMs?: number;
  /** Leaf's bit split; 41/10/12 when absent. */
  readonly layout?: LeafBits;
  /** How far a Leaf clock may have been ahead of idmint's (ms); DEFAULT_CLOCK_SKEW_MS when absent. */
  readonly clockSkewMs?: number;
  /** Accept a layout that runs out within 10 years, as tag creation does. */
  readonly force?: boolean;
}

const MAX_ID = (1n << 63n) - 1n;
const YEAR_MS = 365.25 * 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();

/** The largest ID Leaf could have issued with its clock at or before `atMs`, any worker, any sequence. */
export function leafMaxId(twepochMs: number, bits: LeafBits, atMs: number): bigint {
  // A new ms starts at a random 0..99, or'ed in unmasked: it reaches past a short sequence field.
  return (((BigInt(atMs - twepochMs) + 1n) << BigInt(bits.workerBits + bits.seqBits)) - 1n) | 127n;
}

/** How many ms idmint's epoch lies before twepoch - skew: 1, or more where 127 passes the low bits. */
export function epochGapMs(bits: LeafBits): number {
  return Math.max(1, Math.ceil(128 / 2 ** (bits.workerBits + bits.seqBits)));
}

/** The smallest ID a snowflake layout can issue at `atMs` or later (worker 0, sequence 0). */
export function smallestIdFrom(layout: SnowflakeLayout, atMs: number): bigint {
  return encode(layout, Math.max(0, toUnits(layout, atMs)), 0, 0);
}

function optionProblems(twepochMs: number, bits: LeafBits, skew: number, nowMs: number): string[] {
  const problems: string[] = [];
  if (!Number.isSafeInteger(twepochMs) || twepochMs < 0)
    problems.push(`twepoch must be milliseconds since 1970 (a whole number, 0 or more), got ${twepochMs}`);
  if (!Number.isSafeInteger(skew) || skew < 0 || skew > MAX_CLOCK_SKEW_MS)
    problems.push(
      `the clock-skew allowance must be a whole number of milliseconds from 0 to ${MAX_CLOCK_SKEW_MS} (a year), got ${skew}`,
    );
  const shape = layoutProblems({ epochMs: 0, unit: 'ms', ...bits }).map(
    (x) => `layout ${bits.timeBits}/${bits.workerBits}/${bits.seqBits}: ${x}`,
  );
  problems.push(...shape);
  if (problems.length) return problems;
  // Leaf refuses to start unless its clock is past twepoch; its clock ran at most `skew` ahead.
  if (twepochMs >= nowMs + skew)
    problems.push(
      `twepoch ${twepochMs} (${iso(twepochMs)}) lies after now plus the clock-skew allowance: Leaf starts only once its clock is past twepoch, so no Leaf node issued under it; check --twepoch`,
    );
  else if (twepochMs - skew - epochGapMs(bits) < 0)
    problems.push(
      `twepoch ${twepochMs} less the clock-skew allowance ${skew} ms lies before 1970: idmint's epoch cannot; give a smaller allowance (--clock-skew) if Leaf's clocks allow`,
    );
  else if (BigInt(nowMs + skew - twepochMs) >= 1n << BigInt(bits.timeBits))
    problems.push(
      `Leaf's time since twepoch ${twepochMs} has outgrown the layout's ${bits.timeBits} time bits (by now plus the clock-skew allowance): a tag with this layout and an epoch before twepoch has run out; check --twepoch and --layout`,
    );
  else if (leafMaxId(twepochMs, bits, nowMs + skew) > MAX_ID)
    problems.push(`Leaf's IDs under twepoch ${twepochMs} have passed 2^63-1: no 64-bit ID lies above them`);
  return problems;
}

/**
 * Plans the idmint snowflake tag that continues above Leaf's snowflake IDs, at the moment
 * `nowMs`: created with Leaf's split and the epoch twepoch - skew - 1 ms; an idmint tag of that
 * name is left as it is when it is a snowflake tag whose smallest ID from now on lies above
 * Leaf's largest (a re-run), and refused otherwise (a layout cannot change). Throws
 * SpecProblems listing every reason to refuse.
 */
export function planLeafSnowflake(options: LeafSnowflakeImport, current: Current, nowMs: number): ImportPlan {
  const twepochMs = options.twepochMs ?? LEAF_TWEPOCH_MS;
  const bits = options.layout ?? LEAF_LAYOUT;
  const skew = options.clockSkewMs ?? DEFAULT_CLOCK_SKEW_MS;
  const problems: string[] = [];
  if (typeof options.tag !== 'string' || !TAG_NAME.test(options.tag))
    problems.push(`--tag "${String(options.tag)}" is not a valid idmint tag name (${TAG_NAME_CHARS})`);
  problems.push(...optionProblems(twepochMs, bits, skew, nowMs));
  if (problems.length) throw new SpecProblems(problems);

  const split = `${bits.timeBits}/${bits.workerBits}/${bits.seqBits}`;
  const what = `Leaf's snowflake (twepoch ${twepochMs}, layout ${split})`;
  const epochMs = twepochMs - skew - epochGapMs(bits);
  const want = specOf(
    {
      tag: options.tag,
      mode: 'snowflake',
      epoch: epochMs,
      time_bits: bits.timeBits,
      worker_bits: bits.workerBits,
      seq_bits: bits.seqBits,
      description: `imported from Leaf snowflake (twepoch ${twepochMs}, layout ${split}, clock skew ${skew} ms)`,
      ...(options.force ? { force: true } : {}),
    },
    problems,
    `tag "${options.tag}"`,
  );
  const why = want && clash(current, want, what);
  if (why) problems.push(why);
  if (!want || problems.length) throw new SpecProblems(problems);

  const oldMax = leafMaxId(twepochMs, bits, nowMs + skew);
  const cur = current.live.get(options.tag);
  const spec = specOfMode(cur?.spec ?? want, 'snowflake', 'a Leaf snowflake import');
  const layout = spec.snowflake;
  const first = smallestIdFrom(layout, nowMs);
  if (first <= oldMax) {
    throw new SpecProblems([
      cur
        ? `tag "${options.tag}" exists in idmint as a snowflake tag (epoch ${iso(layout.epochMs)}, layout ${layout.timeBits}/${layout.workerBits}/${layout.seqBits}) whose smallest ID from now on, ${first}, is not above ${oldMax}, the largest ${what} could have issued by now plus the clock-skew allowance (${skew} ms); a snowflake tag's layout cannot change: import under another --tag`
        : `tag "${options.tag}": the layout ${split} with epoch ${iso(epochMs)} cannot issue above ${oldMax} from now on`,
    ]);
  }
  const endMs = runsOutAt(layout).getTime();
  const notes = [
    cur
      ? `tag "${options.tag}" is already a snowflake tag whose IDs lie above Leaf's: left as it is`
      : `epoch ${iso(epochMs)}: Leaf's twepoch ${iso(twepochMs)} less the clock-skew allowance (${skew} ms) and ${epochGapMs(bits)} ms, with Leaf's layout ${split}: an ID idmint issues at its time t lies above every ID a Leaf node issued with its clock at or before t + ${skew} ms, whatever its worker id and sequence`,
    `smallest ID from now on: ${first}; the largest Leaf could have issued (its clock up to ${iso(nowMs + skew)}): ${oldMax}`,
    `the layout runs out at ${iso(endMs)}, ${((endMs - nowMs) / YEAR_MS).toFixed(1)} years from now`,
    "Leaf's snowflake ignores the key of /api/snowflake/get/<key>: all its keys shared one sequence, so its IDs were unique across keys; idmint's tags are separate, so two tags can hand out the same ID. Import each key Leaf's clients send as its own tag only if no client relies on uniqueness across keys",
  ];
  if (first > BigInt(Number.MAX_SAFE_INTEGER))
    notes.push(
      "every ID lies above 2^53-1, as Leaf's did: JavaScript clients must keep them as strings (a JSON number loses digits), as they had to with Leaf",
    );
  const plan: TagPlan = {
    tag: options.tag,
    mode: 'snowflake',
    action: cur ? 'unchanged' : 'create',
    spec,
    epoch: cur?.epoch,
    floors: [],
    tokens: [],
    oldMax: String(oldMax),
    notes,
  };
  return { system: 'leaf-snowflake', tags: [plan], notes: [] };
}
