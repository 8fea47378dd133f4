// Time zones as the old systems see them, for the models in this folder: the local calendar
// fields of an instant (what glibc's localtime_r gives id_server, DST included), and the zone's
// standard offset (what glibc's global `timezone` holds after tzset(): the offset without DST,
// which id_server's framework/time_util.h is_same_cycle uses to cut periods). Read with Intl,
// independently of idmint's period.ts.

/** Zones the scenarios run in: with and without DST, half- and quarter-hour offsets, both ends of the range. */
export const ZONES = [
  'UTC',
  'Asia/Shanghai',
  'America/New_York',
  'Europe/Berlin',
  'Australia/Sydney',
  'Asia/Kolkata',
  'Asia/Kathmandu',
  'America/St_Johns',
  'Australia/Lord_Howe',
  'Pacific/Kiritimati',
  'Etc/GMT+12',
  'America/Sao_Paulo',
] as const;

export interface Fields {
  readonly year: number;
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
  readonly millisecond: number;
}

const formats = new Map<string, Intl.DateTimeFormat>();
const cache = new Map<string, Fields>();

function format(zone: string): Intl.DateTimeFormat {
  let f = formats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formats.set(zone, f);
  }
  return f;
}

/** localtime_r of a whole second (seconds since 1970) in `zone`. */
export function localFields(sec: number, zone: string): Fields {
  const key = `${zone}|${sec}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const v: Record<string, number> = {};
  for (const p of format(zone).formatToParts(sec * 1000)) if (p.type !== 'literal') v[p.type] = Number(p.value);
  const out: Fields = {
    year: v.year,
    month: v.month,
    day: v.day,
    hour: v.hour % 24,
    minute: v.minute,
    second: v.second,
    millisecond: 0,
  };
  if (cache.size > 50_000) cache.clear();
  cache.set(key, out);
  return out;
}

/** The zone's UTC offset at an instant, in seconds (local = UTC + offset). */
export function offsetSec(sec: number, zone: string): number {
  const f = localFields(sec, zone);
  return Math.round((Date.UTC(f.year, f.month - 1, f.day, f.hour, f.minute, f.second) / 1000 - sec) / 60) * 60;
}

const std = new Map<string, number>();

/**
 * The standard offset glibc keeps in `timezone` (negated: `timezone` is seconds west): the
 * smaller of the January and July offsets of the year (DST moves clocks ahead in every zone
 * used here).
 */
export function standardOffsetSec(zone: string, year: number): number {
  const key = `${zone}|${year}`;
  let v = std.get(key);
  if (v === undefined) {
    v = Math.min(offsetSec(Date.UTC(year, 0, 1) / 1000, zone), offsetSec(Date.UTC(year, 6, 1) / 1000, zone));
    std.set(key, v);
  }
  return v;
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** "YYYY-MM-DD HH:MM:SS" of a second in a zone (id_server's log line head). */
export function logStamp(sec: number, zone: string): string {
  const f = localFields(sec, zone);
  return `${pad(f.year, 4)}-${pad(f.month)}-${pad(f.day)} ${pad(f.hour)}:${pad(f.minute)}:${pad(f.second)}`;
}
