// Summarises a V8 .cpuprofile (from `npm run bench -- --cpu-prof` or `node --cpu-prof`):
// self time by function, by package/file, and inclusive time of chosen functions.
// usage: node --import tsx bench/cpuprofile-summary.ts FILE.cpuprofile [--top N] [--incl name,name]
//        [--from S] [--to S] (only samples in that window, seconds from the profile's start)
//        [--per N] (also show µs per unit of work, e.g. per request: N = requests in the window)
//        [--timeline] (busy share per second, to find the window of a load run)
//        [--gaps MS] (gaps between samples longer than MS ms in the window: times the profiler's
//        thread, and so the process, was off its CPU; their count and time past the sampling interval)
import { readFileSync } from 'node:fs';

interface Frame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: Frame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const args = process.argv.slice(2);
const file = args.find((a) => !a.startsWith('--'));
if (!file) {
  console.error('usage: bench/cpuprofile-summary.ts FILE.cpuprofile [--top N] [--incl fn,fn]');
  process.exit(2);
}
const top = Number(args[args.indexOf('--top') + 1]) || 40;
const incl = args.includes('--incl') ? args[args.indexOf('--incl') + 1].split(',') : [];
const opt = (f: string) => (args.includes(f) ? Number(args[args.indexOf(f) + 1]) : undefined);
const from = opt('--from') ?? 0;
const to = opt('--to') ?? Infinity;
const per = opt('--per');

const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const idleId = p.nodes.find((n) => n.callFrame.functionName === '(idle)')?.id;
const selfUs = new Map<number, number>();
const perSecond: { busy: number; all: number }[] = [];
let t = 0;
for (let i = 0; i < p.samples.length; i++) {
  const d = p.timeDeltas[i] ?? 0;
  t += d;
  const sec = Math.floor(t / 1e6);
  perSecond[sec] ??= { busy: 0, all: 0 };
  perSecond[sec].all += d;
  if (p.samples[i] !== idleId) perSecond[sec].busy += d;
  if (t < from * 1e6 || t > to * 1e6) continue;
  selfUs.set(p.samples[i], (selfUs.get(p.samples[i]) ?? 0) + d);
}
if (args.includes('--timeline')) {
  console.log('busy share per second:');
  perSecond.forEach((s, i) =>
    console.log(`  ${String(i).padStart(4)} s  ${s ? ((s.busy / s.all) * 100).toFixed(0).padStart(3) : '  -'}%`),
  );
}
const gapMs = opt('--gaps');
if (gapMs !== undefined) {
  const sorted = [...p.timeDeltas].sort((a, b) => a - b);
  const interval = sorted[Math.floor(sorted.length / 2)] ?? 0;
  let [count, lostUs, at] = [0, 0, 0];
  for (const d of p.timeDeltas) {
    at += d;
    if (at < from * 1e6 || at > to * 1e6 || d <= gapMs * 1000) continue;
    count++;
    lostUs += d - interval;
  }
  console.log(
    `gaps over ${gapMs} ms between samples (interval ${interval} µs): ${count}, ${(lostUs / 1000).toFixed(1)} ms past the interval`,
  );
}
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
const busyTotal = total - (idleId !== undefined ? (selfUs.get(idleId) ?? 0) : 0);

function where(f: Frame): string {
  const u = f.url;
  if (!u) return `(${f.functionName || 'native'})`;
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(u);
  if (nm) return nm[1];
  if (u.startsWith('node:')) return u;
  const src = /\/(src|bench|test)\/(.*)$/.exec(u);
  return src ? `${src[1]}/${src[2]}` : u;
}

const fnSelf = new Map<string, number>();
const pkgSelf = new Map<string, number>();
for (const [id, us] of selfUs) {
  const f = byId.get(id)!.callFrame;
  const key = `${f.functionName || '(anonymous)'}  ${where(f)}:${f.lineNumber + 1}`;
  fnSelf.set(key, (fnSelf.get(key) ?? 0) + us);
  const w = where(f);
  pkgSelf.set(w, (pkgSelf.get(w) ?? 0) + us);
}

const pct = (us: number) =>
  `${((us / total) * 100).toFixed(1).padStart(5)}%${per ? `  ${(us / per).toFixed(3).padStart(7)} µs` : ''}`;
console.log(
  `${file}: ${(total / 1e6).toFixed(2)} s sampled, ${(busyTotal / 1e6).toFixed(2)} s busy${per ? `, ${(busyTotal / per).toFixed(2)} µs busy per unit` : ''}`,
);
console.log('\nself time by package / file:');
for (const [k, us] of [...pkgSelf].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${pct(us)}  ${k}`);
console.log('\nself time by function:');
for (const [k, us] of [...fnSelf].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us)}  ${k}`);

if (incl.length) {
  // Inclusive time: a sample counts once for a name if any frame on its stack has that name.
  console.log('\ninclusive time:');
  const inclUs = new Map<string, number>(incl.map((n) => [n, 0]));
  for (const [id, us] of selfUs) {
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)!.callFrame;
      for (const n of incl) if (!seen.has(n) && (f.functionName === n || `${where(f)}`.includes(n))) seen.add(n);
    }
    for (const n of seen) inclUs.set(n, inclUs.get(n)! + us);
  }
  for (const [n, us] of inclUs) console.log(`  ${pct(us)}  ${n}`);
}
