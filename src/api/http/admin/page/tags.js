// The tags table: one row per tag with its live state as GET /v1/admin/tags/:tag answers it,
// and the consumption rate the page measures between two refreshes.
import { runsOutText } from './capacity.js';
import { fill, fmtNumber, h } from './dom.js';

/** Sums of the live state over the shards of a tag detail. */
export function liveSummary(detail) {
  const shards = detail?.state?.shards ?? [];
  let issued = 0;
  let remaining = 0;
  let nextReady = shards.length > 0;
  const problems = [];
  for (const s of shards) {
    issued += s.issued_since_redis_start ?? 0;
    remaining += s.current ? s.current.remaining : 0;
    if (!s.next) nextReady = false;
    if (s.redis === 'unreachable') problems.push(`shard ${s.shard}: Redis unreachable`);
    if (s.exhausted) problems.push(`shard ${s.shard}: ID space exhausted`);
  }
  return { shards, issued, remaining, nextReady, problems };
}

/** IDs per second between the previous refresh and this one, per tag. */
export class RateMeter {
  constructor() {
    this.last = new Map();
  }

  update(tag, issued, at) {
    const prev = this.last.get(tag);
    this.last.set(tag, {
      issued,
      at,
      rate:
        prev && issued >= prev.issued && at > prev.at ? ((issued - prev.issued) * 1000) / (at - prev.at) : prev?.rate,
    });
    return this.last.get(tag).rate;
  }
}

function layoutText(t) {
  return `${t.time_bits}/${t.worker_bits}/${t.seq_bits} ${t.time_unit}`;
}

function segmentCells(t, detail) {
  const live = liveSummary(detail);
  const s0 = live.shards[0];
  const current =
    live.shards.length === 1 && s0.current
      ? `${s0.current.next_id} – ${s0.current.last_id}`
      : live.shards.length > 1
        ? `${live.shards.filter((s) => s.current).length} of ${live.shards.length} shards`
        : 'none yet';
  const steps = [...new Set(live.shards.map((s) => s.step))];
  return {
    step: steps.length > 0 ? steps.join(', ') : String(t.step),
    current,
    left: live.shards.length > 0 ? fmtNumber(live.remaining) : '–',
    next: live.shards.length === 0 ? '–' : live.nextReady ? 'ready' : 'not yet',
    issued: fmtNumber(live.issued),
    problems: live.problems,
  };
}

export function renderTagsTable(tbody, tags, details, rates, onSelect) {
  if (tags.length === 0) {
    fill(tbody, h('tr', {}, h('td', { colspan: 11, class: 'empty' }, 'No tags yet.')));
    return;
  }
  fill(
    tbody,
    tags.map((t) => {
      const d = details.get(t.tag);
      const failed = d instanceof Error;
      const c =
        t.mode === 'snowflake'
          ? {
              step: layoutText(t),
              current: `runs out ${t.runs_out_at.slice(0, 10)}`,
              left: '–',
              next: '–',
              issued: '–',
              problems: [],
            }
          : failed
            ? { step: String(t.step), current: '?', left: '?', next: '?', issued: '?', problems: [d.message] }
            : segmentCells(t, d);
      const rate = rates.last.get(t.tag)?.rate;
      return h(
        'tr',
        { 'data-tag': t.tag, class: t.enabled ? '' : 'disabled' },
        h(
          'td',
          {},
          h('button', { type: 'button', class: 'tag-link', 'data-tag': t.tag, onclick: () => onSelect(t.tag) }, t.tag),
        ),
        h('td', {}, t.mode === 'rule' ? `rule ${t.template}` : t.mode),
        h('td', { class: 'state' }, t.enabled ? 'enabled' : 'disabled'),
        h('td', { class: 'step' }, c.step),
        h('td', { class: 'current' }, c.current),
        h('td', { class: 'left num' }, c.left),
        h('td', { class: 'next' }, c.next),
        h('td', { class: 'rate num' }, rate === undefined || t.mode === 'snowflake' ? '–' : `${rate.toFixed(1)}/s`),
        h('td', { class: 'runs-out' }, runsOutText(t)),
        h('td', { class: 'issued num' }, c.issued),
        h('td', { class: 'problems' }, c.problems.join('; ')),
      );
    }),
  );
}
