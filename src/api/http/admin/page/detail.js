// The panel of one tag: its definition and per-shard live state (re-drawn on every refresh),
// and, for the admin token, the edit form, enable/disable, delete, client tokens and the move
// to another Redis connection. Every error shown is the server's message.
import { api } from './api.js';
import { $, fill, fmtNumber, h, showError, thead } from './dom.js';
import { capacitySection } from './capacity.js';
import { fieldInputs, formBody, showMode } from './fields.js';

const LIVE_KEYS = new Set(['state', 'tag', 'mode', 'capacity']);

function definition(tag) {
  return h(
    'dl',
    { class: 'definition' },
    Object.entries(tag)
      .filter(([k]) => !LIVE_KEYS.has(k))
      .flatMap(([k, v]) => [
        h('dt', {}, k),
        h('dd', { 'data-field': k }, typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v)),
      ]),
  );
}

function shardsTable(detail) {
  const shards = detail.state?.shards ?? [];
  if (detail.mode === 'snowflake')
    return h('p', { class: 'note' }, 'Snowflake IDs need no segments: see the worker pool below for the leases.');
  if (shards.length === 0) return h('p', { class: 'note' }, 'No segment allocated yet: the first request fetches one.');
  return h(
    'table',
    { class: 'shards' },
    thead([
      'shard',
      'Redis',
      'current segment',
      'left',
      'next segment',
      'step',
      'allocated up to',
      'segments',
      'issued',
      'exhausted',
    ]),
    h(
      'tbody',
      {},
      shards.map((s) =>
        h(
          'tr',
          {},
          h('td', {}, s.shard),
          h('td', {}, s.redis),
          h('td', {}, s.current ? `${s.current.next_id} – ${s.current.last_id}` : 'none'),
          h('td', { class: 'num' }, s.current ? fmtNumber(s.current.remaining) : '0'),
          h('td', {}, s.next ? `ready: ${s.next.first_id} – ${s.next.last_id}` : 'not yet'),
          h('td', { class: 'num shard-step' }, fmtNumber(s.step)),
          h('td', { class: 'num' }, s.allocated_max),
          h('td', { class: 'num' }, fmtNumber(s.segments_used)),
          h('td', { class: 'num' }, fmtNumber(s.issued_since_redis_start)),
          h('td', {}, s.exhausted ? 'yes' : 'no'),
        ),
      ),
    ),
  );
}

/** The last time MySQL was found behind Redis for this tag and raised, if ever. */
function regressionNote(detail) {
  const r = detail.state?.counter_regression;
  if (!r) return null;
  const where = `shard ${r.shard}${r.scope ? `, ${r.scope}` : ''}`;
  return h(
    'p',
    { class: 'note', id: 'counter-regression' },
    `MySQL's counter was found behind Redis ${r.count === 1 ? 'once' : `${fmtNumber(r.count)} times`}; last at ${r.at} (${where}): raised from ${r.from} to ${r.to}. Was MySQL restored or failed over?`,
  );
}

export class TagPanel {
  /** ctx: { role(), refresh(), onDeleted(tag), onUnauthorized(err) } */
  constructor(root, ctx) {
    this.root = root;
    this.ctx = ctx;
    this.tag = null;
    this.detail = null;
  }

  /** Opens the panel on a tag; forms are drawn once here, not on refresh. */
  async open(tag, detail) {
    this.tag = tag;
    this.detail = detail;
    this.root.hidden = false;
    this.root.dataset.tag = tag;
    fill($('#detail-title', this.root), `Tag ${tag}`);
    this.drawLive();
    const admin = this.ctx.role() === 'admin';
    for (const el of this.root.querySelectorAll('.write')) el.hidden = !admin;
    if (admin) {
      this.drawActions();
      this.drawEditForm();
      this.drawMove();
    }
    await this.loadTokens();
  }

  close() {
    this.tag = null;
    this.root.hidden = true;
  }

  /** New live state from a refresh (forms are left as they are). */
  update(detail) {
    if (!this.tag) return;
    this.detail = detail;
    this.drawLive();
    // Redrawn only when the button changes, so a pending delete confirmation stays open.
    if (this.ctx.role() === 'admin' && !(detail instanceof Error) && detail.enabled !== this.drawnEnabled)
      this.drawActions();
  }

  drawLive() {
    const live = $('#detail-live', this.root);
    if (this.detail instanceof Error) fill(live, h('p', { class: 'error' }, this.detail.message));
    else
      fill(
        live,
        definition(this.detail),
        capacitySection(this.detail),
        shardsTable(this.detail),
        regressionNote(this.detail),
      );
  }

  drawActions() {
    const enabled = this.detail.enabled;
    this.drawnEnabled = enabled;
    const box = $('#detail-actions', this.root);
    const err = h('p', { class: 'error', role: 'alert', id: 'action-error', hidden: true });
    const confirm = h(
      'span',
      { id: 'delete-confirm', hidden: true },
      `Delete ${this.tag}? Its IDs are never issued again. `,
      h('button', { type: 'button', id: 'delete-yes', class: 'danger', onclick: () => this.remove(err) }, 'Delete'),
      h(
        'button',
        {
          type: 'button',
          id: 'delete-no',
          onclick: () => {
            confirm.hidden = true;
          },
        },
        'Cancel',
      ),
    );
    fill(
      box,
      h(
        'button',
        { type: 'button', id: 'toggle-enabled', onclick: () => this.setEnabled(!enabled, err) },
        enabled ? 'Disable' : 'Enable',
      ),
      h(
        'button',
        {
          type: 'button',
          id: 'delete-tag',
          class: 'danger',
          onclick: () => {
            confirm.hidden = false;
          },
        },
        'Delete…',
      ),
      confirm,
      err,
    );
  }

  async setEnabled(enabled, err) {
    try {
      await api('PATCH', `/v1/admin/tags/${encodeURIComponent(this.tag)}`, { enabled });
      await this.ctx.refresh();
    } catch (e) {
      this.ctx.onUnauthorized(e);
      showError(err, e.message);
    }
  }

  async remove(err) {
    const tag = this.tag;
    try {
      await api('DELETE', `/v1/admin/tags/${encodeURIComponent(tag)}`);
      this.close();
      await this.ctx.onDeleted(tag);
    } catch (e) {
      this.ctx.onUnauthorized(e);
      showError(err, e.message);
    }
  }

  drawEditForm() {
    const d = this.detail;
    const form = $('#edit-form', this.root);
    const error = $('#edit-error', this.root);
    const done = $('#edit-result', this.root);
    showError(error, '');
    done.textContent = '';
    fill(form, fieldInputs('edit', d), h('div', { class: 'buttons' }, h('button', { type: 'submit' }, 'Save changes')));
    showMode(form, d.mode);
    form.onsubmit = async (ev) => {
      ev.preventDefault();
      showError(error, '');
      done.textContent = '';
      const body = formBody(form, 'edit', d.mode, d);
      if (Object.keys(body).length === 0) {
        done.textContent = 'Nothing changed.';
        return;
      }
      try {
        await api('PATCH', `/v1/admin/tags/${encodeURIComponent(this.tag)}`, body);
        await this.ctx.refresh();
        this.drawEditForm();
        $('#edit-result', this.root).textContent = `Saved: ${Object.keys(body).join(', ')}.`;
      } catch (e) {
        this.ctx.onUnauthorized(e);
        showError(error, e.message);
      }
    };
  }

  async loadTokens() {
    const tag = this.tag;
    const tbody = $('#tokens-table tbody', this.root);
    const error = $('#token-error', this.root);
    const admin = this.ctx.role() === 'admin';
    $('#token-secret', this.root).hidden = true;
    try {
      const { tokens } = await api('GET', `/v1/admin/tags/${encodeURIComponent(tag)}/tokens`);
      if (tag !== this.tag) return;
      showError(error, '');
      fill(
        tbody,
        tokens.length === 0
          ? h('tr', {}, h('td', { colspan: 4, class: 'empty' }, 'No client tokens: the tag serves anyone.'))
          : tokens.map((t) =>
              h(
                'tr',
                { 'data-token-id': t.id },
                h('td', {}, t.id),
                h('td', {}, t.name),
                h('td', {}, t.created_at),
                h(
                  'td',
                  {},
                  admin
                    ? h(
                        'button',
                        { type: 'button', class: 'revoke danger', onclick: () => this.revoke(t.id) },
                        'Revoke',
                      )
                    : '',
                ),
              ),
            ),
      );
    } catch (e) {
      this.ctx.onUnauthorized(e);
      showError(error, e.message);
    }
    const form = $('#token-form', this.root);
    form.onsubmit = async (ev) => {
      ev.preventDefault();
      const name = form.elements.namedItem('name').value.trim();
      try {
        const t = await api(
          'POST',
          `/v1/admin/tags/${encodeURIComponent(this.tag)}/tokens`,
          name === '' ? {} : { name },
        );
        form.reset();
        await this.loadTokens();
        const box = $('#token-secret', this.root);
        fill($('#token-secret-value', box), t.token);
        box.hidden = false;
      } catch (e) {
        this.ctx.onUnauthorized(e);
        showError(error, e.message);
      }
    };
  }

  async revoke(id) {
    try {
      await api('DELETE', `/v1/admin/tags/${encodeURIComponent(this.tag)}/tokens/${id}`);
      await this.loadTokens();
    } catch (e) {
      this.ctx.onUnauthorized(e);
      showError($('#token-error', this.root), e.message);
    }
  }

  /** The move control lists the Redis connections; a server without them says so. */
  async drawMove() {
    const tag = this.tag;
    const select = $('#move-to', this.root);
    const button = $('#move-button', this.root);
    const error = $('#move-error', this.root);
    const result = $('#move-result', this.root);
    showError(error, '');
    result.textContent = '';
    fill(select);
    button.disabled = true;
    let list;
    try {
      list = (await api('GET', '/v1/admin/redis')).redis;
      if (!Array.isArray(list)) throw new Error('GET /v1/admin/redis answered without a "redis" list');
    } catch (e) {
      this.ctx.onUnauthorized(e);
      showError(error, `Redis connections cannot be listed: ${e.message}`);
      return;
    }
    if (tag !== this.tag) return;
    fill(
      select,
      list.map((r) =>
        h(
          'option',
          { value: r.name },
          `${r.name}${r.default ? ' (default)' : ''}, master ${r.master ?? 'not connected'}, ${r.tags} tag${r.tags === 1 ? '' : 's'}`,
        ),
      ),
    );
    button.disabled = list.length === 0;
    button.onclick = async () => {
      showError(error, '');
      result.textContent = '';
      button.disabled = true;
      try {
        const res = await api('POST', `/v1/admin/tags/${encodeURIComponent(this.tag)}/migrate`, { to: select.value });
        result.textContent = `Moved to ${select.value}: ${JSON.stringify(res)}`;
        await this.ctx.refresh();
      } catch (e) {
        this.ctx.onUnauthorized(e);
        showError(error, e.message);
      } finally {
        button.disabled = false;
      }
    };
  }
}
