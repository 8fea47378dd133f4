// The admin page: sign-in, the periodic refresh of tags, Redis servers and worker pools, tag creation, and
// the wiring of the tag panel. With the viewer token the page only shows (body.viewer hides
// every control that changes something; the server refuses such changes anyway).
import { api, signIn as startSession, signOut } from './api.js';
import { TagPanel } from './detail.js';
import { $, fill, h, showError } from './dom.js';
import { fieldInputs, formBody, showMode } from './fields.js';
import { renderRedis } from './redis.js';
import { RateMeter, renderTagsTable } from './tags.js';
import { renderWorkers } from './workers.js';

const REFRESH_MS = 5000;

const state = {
  role: null,
  tags: [],
  details: new Map(),
  rates: new RateMeter(),
  timer: undefined,
  refreshing: undefined,
};

const panel = new TagPanel($('#tag-detail'), {
  role: () => state.role,
  refresh: () => refresh(),
  onDeleted: () => refresh(),
  onUnauthorized: (err) => {
    if (err.status === 401) signedOut(err.message);
  },
});

function signedIn(role) {
  state.role = role;
  document.body.classList.toggle('viewer', role === 'viewer');
  fill($('#role-badge'), role === 'admin' ? 'admin' : 'viewer (read only)');
  $('#sign-in').hidden = true;
  $('#console').hidden = false;
  $('#session').hidden = false;
  for (const el of document.querySelectorAll('.write')) el.hidden = role !== 'admin';
  $('#create-section').hidden = true;
  refresh();
  clearInterval(state.timer);
  state.timer = setInterval(() => refresh(), REFRESH_MS);
}

/** Shows the sign-in form; `clear`: also end the session on the server (drop its cookie). */
function signedOut(message, clear = true) {
  clearInterval(state.timer);
  state.role = null;
  state.tags = [];
  state.details.clear();
  panel.close();
  if (clear) signOut().catch(() => undefined);
  document.body.classList.remove('viewer');
  $('#console').hidden = true;
  $('#session').hidden = true;
  $('#sign-in').hidden = false;
  showError($('#sign-in-error'), message);
  $('#token').value = '';
}

async function signIn(token) {
  try {
    const { role } = await startSession(token);
    showError($('#sign-in-error'), '');
    signedIn(role);
  } catch (err) {
    showError($('#sign-in-error'), err.message);
  }
}

async function loadTags() {
  const { tags } = await api('GET', '/v1/admin/tags');
  tags.sort((a, b) => a.tag.localeCompare(b.tag));
  const details = await Promise.all(
    tags.map((t) => api('GET', `/v1/admin/tags/${encodeURIComponent(t.tag)}`).catch((err) => err)),
  );
  const now = performance.now();
  state.tags = tags;
  state.details = new Map(tags.map((t, i) => [t.tag, details[i]]));
  for (const d of details) {
    if (d instanceof Error || !d.state) continue;
    state.rates.update(
      d.tag,
      d.state.shards.reduce((n, s) => n + (s.issued_since_redis_start ?? 0), 0),
      now,
    );
  }
  renderTagsTable($('#tags-table tbody'), tags, state.details, state.rates, (tag) => select(tag));
  if (panel.tag) {
    if (state.details.has(panel.tag)) panel.update(state.details.get(panel.tag));
    else panel.close();
  }
}

async function loadRedis() {
  renderRedis($('#redis'), await api('GET', '/v1/admin/redis'));
}

async function loadWorkers() {
  renderWorkers($('#workers'), await api('GET', '/v1/admin/workers'));
}

/** One refresh at a time; a call during a refresh waits for it and then runs again. */
function refresh() {
  const run = async () => {
    const results = await Promise.allSettled([loadTags(), loadRedis(), loadWorkers()]);
    const failed = results.find((r) => r.status === 'rejected');
    if (failed && failed.reason.status === 401) return signedOut(failed.reason.message);
    showError($('#tags-error'), failed ? `Refresh failed: ${failed.reason.message}` : '');
    fill($('#refreshed-at'), `updated ${new Date().toLocaleTimeString()}`);
  };
  state.refreshing = (state.refreshing ?? Promise.resolve()).then(run, run).finally(() => undefined);
  return state.refreshing;
}

async function select(tag) {
  const d = state.details.get(tag);
  await panel.open(tag, d ?? new Error(`tag ${tag} is gone`));
  $('#tag-detail').scrollIntoView({ block: 'nearest' });
}

function drawCreateForm() {
  const form = $('#create-form');
  fill(
    form,
    fieldInputs('create'),
    h(
      'div',
      { class: 'buttons' },
      h('button', { type: 'submit', id: 'create-submit' }, 'Create'),
      h(
        'button',
        {
          type: 'button',
          id: 'create-cancel',
          onclick: () => {
            $('#create-section').hidden = true;
          },
        },
        'Cancel',
      ),
    ),
  );
  const mode = form.elements.namedItem('mode');
  showMode(form, mode.value);
  mode.addEventListener('change', () => showMode(form, mode.value));
  form.onsubmit = async (ev) => {
    ev.preventDefault();
    const error = $('#create-error');
    showError(error, '');
    const body = formBody(form, 'create', mode.value);
    body.mode = mode.value;
    try {
      const created = await api('POST', '/v1/admin/tags', body);
      $('#create-section').hidden = true;
      await refresh();
      await select(created.tag);
    } catch (err) {
      if (err.status === 401) return signedOut(err.message);
      showError(error, err.message);
    }
  };
}

$('#sign-in-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  signIn($('#token').value.trim());
});
// The form comes back once the server has dropped the cookie.
$('#sign-out').addEventListener('click', () =>
  signOut().then(
    () => signedOut('', false),
    (err) => signedOut(err.message, false),
  ),
);
$('#refresh').addEventListener('click', () => refresh());
$('#new-tag').addEventListener('click', () => {
  drawCreateForm();
  showError($('#create-error'), '');
  $('#create-section').hidden = false;
  $('#create-form').elements.namedItem('tag').focus();
});
$('#detail-close').addEventListener('click', () => panel.close());

// A session kept from an earlier visit (the cookie, which the page cannot see) signs in at
// once; without one the sign-in form stays.
api('GET', '/v1/admin/session').then(
  ({ role }) => signedIn(role),
  (err) => signedOut(err.status === 401 ? '' : err.message, false),
);
