// Small DOM helpers. Text always goes in as text nodes: nothing from the server is parsed
// as HTML.

/** Creates an element: h('button', { class: 'write', onclick: fn }, 'Delete'). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

/** A table's head row: thead(['name', 'address']). */
export function thead(columns) {
  return h(
    'thead',
    {},
    h(
      'tr',
      {},
      columns.map((c) => h('th', {}, c)),
    ),
  );
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replaces the children of el. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export const $ = (sel, root = document) => root.querySelector(sel);

/** Shows a message in an error slot, or clears it with an empty message. */
export function showError(el, message) {
  el.textContent = message ?? '';
  el.hidden = !message;
}

export function fmtNumber(n) {
  return typeof n === 'number' ? n.toLocaleString('en-US') : String(n);
}

/** A duration in ms as "12.3 s" / "850 ms". */
export function fmtMs(ms) {
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${ms} ms`;
}
