// The tag fields the forms offer, per mode, for creating and for editing. The page does not
// validate values (beyond required fields): it sends what was typed and shows the server's
// answer. Empty fields are left out, so the server's defaults apply.
import { h } from './dom.js';

const MODES = ['segment', 'snowflake', 'rule'];
const SEG = ['segment'];
const SEG_RULE = ['segment', 'rule'];
const SF = ['snowflake'];
const RULE = ['rule'];

/** name, label, kind, the modes it is offered for on create and on edit, and a hint. */
export const FIELDS = [
  {
    name: 'tag',
    label: 'Name',
    kind: 'text',
    create: MODES,
    edit: [],
    required: true,
    hint: '[A-Za-z0-9_.-], up to 64',
  },
  { name: 'mode', label: 'Mode', kind: 'select', options: MODES, create: MODES, edit: [] },
  {
    name: 'template',
    label: 'Template',
    kind: 'text',
    create: RULE,
    edit: RULE,
    required: true,
    hint: 'e.g. {year%10}{MM}{dd}{counter:4}',
  },
  { name: 'min_counter', label: 'Min counter', kind: 'int', create: RULE, edit: [] },
  { name: 'max_counter', label: 'Max counter', kind: 'int', create: RULE, edit: RULE, required: true },
  { name: 'reset_seconds', label: 'Reset every (s)', kind: 'int', create: RULE, edit: [], hint: '0: never' },
  { name: 'time_zone', label: 'Time zone', kind: 'text', create: RULE, edit: [], hint: 'IANA name, default UTC' },
  {
    name: 'preset',
    label: 'Preset',
    kind: 'select',
    options: ['', 'snowflake', 'uid', 'jssafe'],
    create: SF,
    edit: [],
  },
  { name: 'epoch', label: 'Epoch', kind: 'date', create: SF, edit: [], hint: 'ISO 8601 date or ms' },
  { name: 'time_unit', label: 'Time unit', kind: 'select', options: ['', 'ms', 's'], create: SF, edit: [] },
  { name: 'time_bits', label: 'Time bits', kind: 'int', create: SF, edit: [] },
  { name: 'worker_bits', label: 'Worker bits', kind: 'int', create: SF, edit: [] },
  { name: 'seq_bits', label: 'Sequence bits', kind: 'int', create: SF, edit: [] },
  { name: 'order', label: 'Order', kind: 'select', options: ['', 'global', 'node'], create: SEG_RULE, edit: [] },
  { name: 'layout', label: 'Layout', kind: 'select', options: ['', 'plain', 'sharded'], create: SEG, edit: [] },
  { name: 'shards', label: 'Shards', kind: 'int', create: SEG, edit: [] },
  { name: 'app_id', label: 'App id', kind: 'int', create: SEG, edit: [] },
  { name: 'app_bits', label: 'App bits', kind: 'int', create: SEG, edit: [] },
  { name: 'step', label: 'Step', kind: 'int', create: SEG_RULE, edit: SEG_RULE },
  { name: 'min_step', label: 'Min step', kind: 'int', create: SEG_RULE, edit: SEG_RULE },
  { name: 'max_step', label: 'Max step', kind: 'int', create: SEG_RULE, edit: SEG_RULE },
  { name: 'target_seconds', label: 'Target seconds', kind: 'int', create: SEG_RULE, edit: SEG_RULE },
  { name: 'prefetch', label: 'Prefetch', kind: 'number', create: SEG_RULE, edit: SEG_RULE },
  { name: 'max_id_limit', label: 'Max ID', kind: 'bigint', create: SEG, edit: SEG },
  { name: 'node_block', label: 'Node block', kind: 'int', create: SEG_RULE, edit: SEG_RULE },
  {
    name: 'stride',
    label: 'Stride',
    kind: 'int',
    create: SEG_RULE,
    edit: [],
    hint: 'default 1; every value is offset (mod stride)',
  },
  { name: 'offset', label: 'Offset', kind: 'int', create: SEG_RULE, edit: [], hint: 'default 0; below stride' },
  {
    name: 'key_retention_seconds',
    label: 'Idempotency key kept (s)',
    kind: 'int',
    create: MODES,
    edit: MODES,
    hint: 'default 86400; 60 to 2592000',
  },
  { name: 'description', label: 'Description', kind: 'text', create: MODES, edit: MODES },
  { name: 'force', label: 'Force (accept a short lifetime)', kind: 'bool', create: ['snowflake', 'rule'], edit: RULE },
  { name: 'enabled', label: 'Enabled', kind: 'bool', create: MODES, edit: [], default: true },
];

function input(f, value) {
  if (f.kind === 'select') {
    return h(
      'select',
      { name: f.name },
      f.options.map((o) => h('option', { value: o, selected: o === value }, o === '' ? '(default)' : o)),
    );
  }
  if (f.kind === 'bool')
    return h('input', {
      type: 'checkbox',
      name: f.name,
      checked: value === undefined ? f.default === true : value === true,
    });
  // Plain text inputs: the server, not the browser, judges numbers.
  return h('input', {
    type: 'text',
    name: f.name,
    value: value ?? '',
    required: f.required,
    placeholder: f.hint,
    autocomplete: 'off',
    spellcheck: 'false',
  });
}

/**
 * The field labels for a form: every field used by any mode, tagged with its modes, so that
 * showMode() can show the ones of the chosen mode. `values` prefills (edit).
 */
export function fieldInputs(purpose, values = {}) {
  return FIELDS.filter((f) => f[purpose].length > 0).map((f) => {
    const v = values[f.name];
    const shown =
      f.kind === 'bool' ? (f.name === 'force' ? false : v) : v === undefined || v === null ? undefined : String(v);
    return h(
      'label',
      { class: `field field-${f.kind}`, 'data-modes': f[purpose].join(' ') },
      h('span', {}, f.label),
      input(f, shown),
    );
  });
}

/** Shows the fields of one mode (and disables the others so that they are not required). */
export function showMode(form, mode) {
  for (const label of form.querySelectorAll('label.field')) {
    const on = label.dataset.modes.split(' ').includes(mode);
    label.hidden = !on;
    for (const el of label.querySelectorAll('input, select')) el.disabled = !on;
  }
}

function convert(f, raw) {
  if (f.kind === 'int' || f.kind === 'number') return /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(raw) ? Number(raw) : raw;
  if (f.kind === 'date') return /^\d+$/.test(raw) ? Number(raw) : raw;
  return raw; // text, select, bigint (max_id_limit is sent as a decimal string)
}

/**
 * The JSON body of a form for a mode. On create, empty fields are left out. On edit
 * (`current` given) only the fields whose text differs from the stored value are sent.
 */
export function formBody(form, purpose, mode, current) {
  const body = {};
  for (const f of FIELDS) {
    if (!f[purpose].includes(mode)) continue;
    const el = form.elements.namedItem(f.name);
    if (!el) continue;
    if (f.kind === 'bool') {
      if (current === undefined ? el.checked !== (f.default === true) : el.checked) body[f.name] = el.checked;
      continue;
    }
    const raw = el.value.trim();
    if (current === undefined) {
      if (raw !== '') body[f.name] = convert(f, raw);
    } else {
      const was = current[f.name] === undefined || current[f.name] === null ? '' : String(current[f.name]);
      if (raw === was || (raw === '' && f.kind !== 'text')) continue;
      body[f.name] = convert(f, raw);
    }
  }
  return body;
}
