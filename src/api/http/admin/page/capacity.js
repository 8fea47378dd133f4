// Capacity as the server forecasts it (the "capacity" field of a tag view): consumption rate,
// IDs left and when they run out at that rate; per shard or per rule app; a snowflake layout's
// end of time and its worker pool.
import { fmtNumber, h, thead } from './dom.js';

/** "2026-11-23 10:15" in UTC, or the text for "does not run out". */
export function fmtWhen(iso, never = 'not at this rate') {
  return iso ? `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC` : never;
}

const fmtRate = (r) => (typeof r === 'number' ? `${r.toFixed(1)}/s` : '–');

/** The table cell text for a tag's forecast. */
export function runsOutText(t) {
  const c = t.capacity;
  if (!c) return '?';
  if (t.mode === 'snowflake') return fmtWhen(c.runs_out_at, 'never');
  if (t.mode === 'rule')
    return c.runs_out_before_reset ? `${fmtWhen(c.runs_out_at)}, before the reset` : 'not before the reset';
  return fmtWhen(c.runs_out_at);
}

function counterRows(rows, key) {
  return h(
    'table',
    { class: 'capacity-counters' },
    thead([key, 'rate', 'left', 'runs out', 'limit', 'allocated up to']),
    h(
      'tbody',
      {},
      rows.map((r) =>
        h(
          'tr',
          { 'data-counter': String(r[key]) },
          h('td', {}, r[key]),
          h('td', { class: 'num' }, fmtRate(r.rate_ids_per_second)),
          h('td', { class: 'num' }, fmtNumber(r.remaining_ids)),
          h('td', {}, fmtWhen(r.runs_out_at)),
          h('td', { class: 'num' }, fmtNumber(r.limit)),
          h('td', { class: 'num' }, fmtNumber(r.allocated_max)),
        ),
      ),
    ),
  );
}

/** The capacity section of the tag panel. */
export function capacitySection(detail) {
  const c = detail.capacity;
  if (!c) return h('p', { class: 'note', id: 'capacity' }, 'Capacity cannot be read now.');
  const item = (k, v) => [h('dt', {}, k), h('dd', { 'data-capacity': k }, v)];
  if (detail.mode === 'snowflake') {
    const pool = c.worker_pool;
    return h(
      'section',
      { id: 'capacity' },
      h('h3', {}, 'Capacity'),
      h(
        'dl',
        { class: 'definition' },
        item('layout runs out', fmtWhen(c.runs_out_at, 'never')),
        item('worker ids leased', pool ? `${fmtNumber(pool.used)} of ${fmtNumber(pool.size)}` : '?'),
      ),
    );
  }
  const rule = detail.mode === 'rule';
  return h(
    'section',
    { id: 'capacity' },
    h('h3', {}, 'Capacity'),
    h(
      'dl',
      { class: 'definition' },
      item('rate', fmtRate(c.rate_ids_per_second)),
      item(rule ? 'left this period (app nearest max_counter)' : 'left', fmtNumber(c.remaining_ids)),
      item('runs out', rule && !c.runs_out_before_reset ? 'not before the reset' : fmtWhen(c.runs_out_at)),
      rule ? item('period ends', fmtWhen(c.period_ends_at, 'never')) : null,
    ),
    rule
      ? c.apps.length
        ? counterRows(c.apps, 'app')
        : h('p', { class: 'note' }, 'No app has taken an ID this period.')
      : counterRows(c.shards, 'shard'),
  );
}
