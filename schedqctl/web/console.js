// schedq console: the single page of `schedqctl web`.
//
// Plain JavaScript, no library.  Every value from the database reaches the
// page through textContent or an SVG attribute set with setAttribute, never
// through innerHTML: a task kind such as <img src=x onerror=...> shows as
// text.  The page polls the JSON API of the page shown every two seconds
// (longer when a call is slow).
// POSTs carry the session's CSRF token in the X-CSRF-Token header.
'use strict';

const POLL_MS = 2000;
const SVGNS = 'http://www.w3.org/2000/svg';
const STATUSES = ['pending', 'available', 'running', 'done', 'failed', 'canceled', 'skipped'];
const STATUS_COLORS = {
  pending: '#9aa5b1', available: '#3b82f6', running: '#d97706', done: '#16a34a',
  failed: '#dc2626', canceled: '#4b5563', skipped: '#9333ea',
};

let session = null;
let loginToken = null;
let page = 'overview';
let timer = null;
let generation = 0;
const pages = {};

// --- DOM helpers: text only -------------------------------------------------

function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'class') e.className = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const kid of kids.flat()) {
    if (kid === undefined || kid === null) continue;
    e.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return e;
}

function s(tag, attrs, ...kids) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  }
  for (const kid of kids.flat()) {
    if (kid === undefined || kid === null) continue;
    e.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return e;
}

function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }
function $(id) { return document.getElementById(id); }
function fmtTime(t) { return t ? String(t).replace('T', ' ').replace(/\.\d+/, '') : ''; }
function fmtNum(n, d) { return n === null || n === undefined ? '' : Number(n).toFixed(d); }
function badge(status) { return h('span', { class: 'badge st-' + (STATUSES.includes(status) ? status : 'pending') }, status); }

function say(text, isError) {
  const m = $('message');
  m.textContent = text;
  m.className = isError ? 'error' : '';
  m.hidden = !text;
}

function table(columns, rows, rowAttrs) {
  return h('table', {},
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', { class: c.num ? 'num' : null }, c.title)))),
    h('tbody', {}, rows.map((r) => h('tr', rowAttrs ? rowAttrs(r) : {},
      columns.map((c) => h('td', { class: c.num ? 'num' : null, 'data-col': c.key || null },
        c.cell ? c.cell(r) : (r[c.key] ?? '')))))));
}

// A section that the role may not read: the database's refusal in its place.
function denied(value) {
  if (value && !Array.isArray(value) && value.error !== undefined) {
    return h('p', { class: 'denied' }, 'Not shown: ' + value.error);
  }
  return null;
}

// --- API ----------------------------------------------------------------------

async function api(name, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const r = await fetch('/api/' + name + (q.toString() ? '?' + q : ''), { credentials: 'same-origin' });
  if (r.status === 401) { showLogin(); throw new Error('not signed in'); }
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

function errorText(body) {
  let t = body.error || 'refused';
  if (body.sqlstate) t += ' (SQLSTATE ' + body.sqlstate + ')';
  if (body.detail) t += '\n' + body.detail;
  if (body.hint) t += '\nHint: ' + body.hint;
  return t;
}

async function act(name, params, what) {
  const r = await fetch('/api/action/' + name, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'X-CSRF-Token': session.csrf },
    body: new URLSearchParams(params),
  });
  const body = await r.json();
  if (r.ok) say(what + ': ' + (body.changed === false ? 'nothing to change' : 'done') + (body.task ? ', task #' + body.task : ''), false);
  else say(what + ': ' + errorText(body), true);
  refresh();
  return r.ok;
}

function actionButton(label, name, params, what, danger) {
  if (!session || session.readOnly) return null;
  return h('button', { type: 'button', class: danger ? 'danger' : null, 'data-action': name,
    onclick: () => act(name, params, what) }, label);
}

// --- sign-in --------------------------------------------------------------------

function showLogin() {
  session = null;
  stopPolling();
  $('app').hidden = true;
  $('nav').hidden = true;
  $('signout').hidden = true;
  $('who').textContent = '';
  $('login').hidden = false;
  fetch('/api/session', { credentials: 'same-origin' }).then((r) => r.json()).then((b) => { loginToken = b.loginToken; });
}

async function signIn(ev) {
  ev.preventDefault();
  const err = $('login-error');
  err.hidden = true;
  const r = await fetch('/api/login', {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'X-CSRF-Token': loginToken || '' },
    body: new URLSearchParams({ user: $('login-user').value, password: $('login-password').value }),
  });
  const body = await r.json();
  $('login-password').value = '';
  if (!r.ok) {
    err.textContent = body.error || 'could not sign in';
    err.hidden = false;
    showLogin();
    $('login').hidden = false;
    return;
  }
  start(body);
}

async function signOut() {
  await fetch('/api/logout', { method: 'POST', credentials: 'same-origin',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'X-CSRF-Token': session.csrf } });
  say('', false);
  showLogin();
}

function start(s0) {
  session = s0;
  $('login').hidden = true;
  $('nav').hidden = false;
  $('app').hidden = false;
  $('signout').hidden = !session.signOut;
  $('who').textContent = session.user + ' @ ' + session.database +
    (session.source === 'monitor' ? ' · monitor views (no payloads)' : '') +
    (session.readOnly ? ' · read-only' : '');
  route();
}

// --- routing and polling --------------------------------------------------------

function stopPolling() { if (timer) clearTimeout(timer); timer = null; }

// The next poll: POLL_MS after the last answer, or three times as long as
// the last call took when that is longer (a large table: the server is
// never kept busy by one page more than a quarter of the time).
function schedule(g, took) {
  if (g !== generation || !session) return;
  timer = setTimeout(() => refresh().then((t) => schedule(g, t)), Math.max(POLL_MS, 3 * took));
}

function route() {
  if (!session) return;
  const name = (location.hash || '#overview').slice(1).split('?')[0];
  page = pages[name] ? name : 'overview';
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('active', a.dataset.page === page);
  generation++;
  const app = clear($('app'));
  app.dataset.page = page;
  pages[page].init(app);
  stopPolling();
  const g = generation;
  refresh().then((t) => schedule(g, t));
}

// Load the page shown; returns how long it took (ms).
async function refresh() {
  if (!session) return 0;
  const g = generation;
  const t0 = Date.now();
  try {
    await pages[page].load(() => g === generation);
    colorSwatches($('app'));
  } catch (e) {
    if (session) say(String(e.message || e), true);
  }
  return Date.now() - t0;
}

// --- charts -----------------------------------------------------------------------

function lineChart(title, minutes, series, unit, id) {
  const W = 460; const H = 150; const L = 44; const B = 20; const T = 8;
  let max = 0;
  for (const sr of series) for (const v of sr.values) if (v !== null && v > max) max = v;
  if (max === 0) max = 1;
  const x = (i) => L + (i * (W - L - 8)) / Math.max(1, minutes.length - 1);
  const y = (v) => T + (H - T - B) * (1 - v / max);
  const svg = s('svg', { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title, id });
  svg.append(s('line', { x1: L, y1: H - B, x2: W - 8, y2: H - B, stroke: '#9aa5b1' }));
  svg.append(s('line', { x1: L, y1: T, x2: L, y2: H - B, stroke: '#9aa5b1' }));
  svg.append(s('text', { x: L - 4, y: T + 8, 'text-anchor': 'end' }, fmtNum(max, max < 10 ? 2 : 0) + unit));
  svg.append(s('text', { x: L - 4, y: H - B, 'text-anchor': 'end' }, '0'));
  svg.append(s('text', { x: L, y: H - 4 }, '-60 min'));
  svg.append(s('text', { x: W - 8, y: H - 4, 'text-anchor': 'end' }, 'now'));
  for (const sr of series) {
    const pts = [];
    sr.values.forEach((v, i) => { if (v !== null) pts.push(`${x(i).toFixed(1)},${y(v).toFixed(1)}`); });
    if (pts.length) svg.append(s('polyline', { points: pts.join(' '), fill: 'none', stroke: sr.color, 'stroke-width': 1.5, 'data-series': sr.name }));
    if (pts.length < 10) for (const pt of pts) { const [cx, cy] = pt.split(','); svg.append(s('circle', { cx, cy, r: 2.5, fill: sr.color })); }
  }
  return h('div', { class: 'chart' }, h('div', { class: 'title' }, title), svg,
    h('div', { class: 'legend' }, series.map((sr) => h('span', {}, h('span', { class: 'swatch', 'data-color': sr.color }), sr.name))));
}

function colorSwatches(root) {
  for (const e of root.querySelectorAll('.swatch[data-color]')) e.style.background = e.dataset.color;
}

// --- pages --------------------------------------------------------------------------

// The charts of the last hour: a call of their own, every CHARTS_MS (it
// reads every task finished in the hour).
const CHARTS_MS = 30000;
let chartsAt = 0;

async function loadCharts(current) {
  const box = $('ov-charts');
  if (box.firstChild && Date.now() - chartsAt < CHARTS_MS) return;
  const d = await api('charts');
  if (!current()) return;
  chartsAt = Date.now();
  if (d.error !== undefined) { clear(box).append(denied(d)); return; }
  const m = d.minutes || [];
  clear(box);
  box.append(lineChart('Completions and failures per second', m, [
    { name: 'done/s', color: '#16a34a', values: m.map((r) => r.done / 60) },
    { name: 'failed/s', color: '#dc2626', values: m.map((r) => r.failed / 60) },
  ], '/s', 'chart-rate'));
  box.append(lineChart('Wait from due to start (s)', m, [
    { name: 'p50', color: '#2563eb', values: m.map((r) => (r.latency ? r.latency[0] : null)) },
    { name: 'p95', color: '#d97706', values: m.map((r) => (r.latency ? r.latency[1] : null)) },
    { name: 'p99', color: '#dc2626', values: m.map((r) => (r.latency ? r.latency[2] : null)) },
  ], 's', 'chart-latency'));
  if (m.some((r) => r.estimated)) {
    box.append(h('p', { class: 'muted', id: 'chart-estimated' },
      'Minutes with more than 500 tasks of a status are estimated from the time their first 500 span; ' +
      'the waits of a minute are those of about its first 100 tasks.'));
  }
}

// The window of the overview's done and failed counts: the hour, or the
// shorter time the newest tasks of a busy hour span.
function fmtWindow(sec) {
  if (sec >= 3600) return 'hour';
  if (sec >= 120) return Math.round(sec / 60) + ' min';
  return Math.max(1, Math.round(sec)) + ' s';
}

// The pending tasks of a queue by what holds them: run_at in the future,
// due (the next promotion pass promotes or parks them), parked behind an
// exclusive key, a concurrency limit or dependencies.
const PENDING_GATES = [['time', 'waiting: run_at'], ['due', 'due'], ['lock', 'waiting: lock key'],
  ['limit', 'waiting: limit'], ['deps', 'waiting: dependencies']];

pages.overview = {
  init(app) {
    app.append(h('h1', {}, 'Overview'), h('div', { id: 'ov-queues' }), h('h2', {}, 'The last hour'),
      h('div', { class: 'charts', id: 'ov-charts' }), h('h2', {}, 'Schedulers'), h('div', { id: 'ov-schedulers' }));
  },
  async load(current) {
    const d = await api('overview');
    if (!current()) return;
    const q = clear($('ov-queues'));
    const o = d.overview;
    if (o.error !== undefined) q.append(denied(o));
    else {
      const paused = o.queues.filter((x) => x.paused).map((x) => x.queue);
      q.append(table([
        { title: 'queue', key: 'queue' },
        { title: 'paused', cell: (r) => (r.paused ? 'paused' : '') },
        { title: 'available', key: 'available', cell: (r) => r.available + (r.available_more ? '+' : ''), num: true },
        { title: 'running', key: 'running', num: true },
        { title: 'pending', key: 'pending', cell: (r) => r.pending + (r.pending_more ? '+' : ''), num: true },
        ...PENDING_GATES.map(([gate, title]) => ({ title, key: 'pending_' + gate, cell: (r) => (r.pending_by || {})[gate] || 0, num: true })),
        { title: 'failed, last ' + fmtWindow(o.failed_window_s), key: 'failed', num: true },
        { title: 'done, last ' + fmtWindow(o.done_window_s), key: 'done', num: true },
        { title: 'oldest available', cell: (r) => (r.oldest_available_s === null ? '' : r.oldest_available_s + ' s'), num: true },
        { title: '', cell: (r) => (r.paused ? actionButton('Resume', 'resume', { queue: r.queue }, 'resume ' + r.queue)
          : actionButton('Pause', 'pause', { queue: r.queue }, 'pause ' + r.queue)) },
      ], o.queues, (r) => ({ 'data-queue': r.queue })));
      q.append(h('p', { class: 'muted', id: 'ov-paused' }, paused.length ? 'Paused: ' + paused.join(', ') : 'No queue is paused.'));
      await loadCharts(current);
    }
    const sc = clear($('ov-schedulers'));
    if (d.schedulers.error !== undefined) sc.append(denied(d.schedulers));
    else {
      sc.append(table([
        { title: 'database', key: 'datname' }, { title: 'pid', key: 'pid', num: true }, { title: 'state', key: 'state' },
        { title: 'last tick', cell: (r) => fmtTime(r.last_tick) }, { title: 'sql workers', key: 'sql_workers', num: true },
        { title: 'wanted', key: 'sql_workers_wanted', num: true },
      ], d.schedulers));
    }
  },
};

// Tasks: filters, newest first, keyset pages (the cursor is the last id shown).
const taskView = { filters: {}, cursors: [], before: null, selected: null, next: null };

pages.tasks = {
  init(app) {
    const f = taskView.filters;
    const field = (name, label, attrs) => h('label', {}, label, h('input', Object.assign({ name, value: f[name] || '' }, attrs || {})));
    const form = h('form', { class: 'filters', id: 'task-filters', onsubmit: (ev) => {
      ev.preventDefault();
      const fd = new FormData(ev.target);
      taskView.filters = {};
      for (const [k, v] of fd.entries()) if (v) taskView.filters[k] = v;
      taskView.before = null; taskView.cursors = [];
      if (taskView.filters.id) taskView.selected = taskView.filters.id;
      refresh();
    } },
    field('queue', 'queue'),
    h('label', {}, 'status', h('select', { name: 'status' }, h('option', { value: '' }, 'any'),
      STATUSES.map((st) => h('option', { value: st, selected: f.status === st }, st)))),
    field('kind', 'kind'), field('owner', 'owner'),
    field('since', 'created since', { placeholder: '2030-01-31 09:00' }), field('until', 'created before'),
    field('id', 'id', { size: 8 }), field('dedup', 'dedup key'),
    field('limit', 'per page', { size: 4, placeholder: '50' }),
    h('button', { type: 'submit', id: 'task-search' }, 'Search'));
    app.append(h('h1', {}, 'Tasks'), form, h('div', { id: 'task-list' }),
      h('div', { class: 'pager' },
        h('button', { type: 'button', id: 'task-first', onclick: () => { taskView.before = null; taskView.cursors = []; refresh(); } }, 'First page'),
        h('button', { type: 'button', id: 'task-next', onclick: () => {
          if (taskView.next) { taskView.cursors.push(taskView.before); taskView.before = taskView.next; refresh(); }
        } }, 'Next page'),
        h('span', { class: 'muted', id: 'task-page' })),
      h('div', { id: 'task-detail' }));
  },
  async load(current) {
    const f = taskView.filters;
    const limit = Number(f.limit || 50);
    const d = await api('tasks', Object.assign({}, f, { before: taskView.before, limit }));
    if (!current()) return;
    const rows = d.tasks.slice(0, limit);
    taskView.next = d.tasks.length > limit ? rows[rows.length - 1].id : null;
    $('task-next').disabled = !taskView.next;
    $('task-page').textContent = 'page ' + (taskView.cursors.length + 1) + (taskView.next ? '' : ' (last)');
    clear($('task-list')).append(table([
      { title: 'id', key: 'id', num: true }, { title: 'queue', key: 'queue' }, { title: 'kind', key: 'kind' },
      { title: 'status', cell: (r) => badge(r.status) }, { title: 'owner', key: 'owner' },
      { title: 'attempts', cell: (r) => r.attempts + '/' + r.max_attempts, num: true },
      { title: 'created', cell: (r) => fmtTime(r.created_at) }, { title: 'worker', key: 'claimed_by' },
      { title: 'error', key: 'last_error' },
    ], rows, (r) => ({ class: 'clickable', 'data-id': r.id, onclick: () => { taskView.selected = r.id; refresh(); } })));
    if (taskView.selected) await showTask(taskView.selected, current);
  },
};

async function showTask(id, current) {
  const box = $('task-detail');
  let t;
  try { t = await api('task', { id }); } catch (e) {
    if (current()) clear(box).append(h('p', { class: 'error' }, String(e.message)));
    return;
  }
  if (!current()) return;
  const json = (v) => h('pre', {}, v === null || v === undefined ? '' : JSON.stringify(v, null, 2));
  const fields = ['status', 'queue', 'kind', 'owner', 'priority', 'attempts', 'max_attempts', 'run_at', 'created_at',
    'started_at', 'finished_at', 'claimed_by', 'lease', 'lease_expires_at', 'deadline', 'timeout', 'lock_key',
    'concurrency_key', 'dedup_key', 'run_id', 'depends_on', 'periodic', 'parked_on', 'progress', 'progress_note', 'progress_at'];
  const dl = h('dl', {});
  for (const k of fields) {
    if (!(k in t)) continue;
    let v = t[k];
    if (Array.isArray(v)) v = v.join(', ');
    dl.append(h('dt', {}, k), h('dd', { 'data-field': k }, k.endsWith('_at') || k === 'deadline' ? fmtTime(v) : (v ?? '')));
  }
  clear(box).append(h('div', { class: 'detail', id: 'task-' + t.id },
    h('h2', {}, 'Task ' + t.id + ' ', badge(t.status)),
    h('div', { class: 'pager' },
      actionButton('Retry', 'retry', { id: t.id }, 'retry task ' + t.id),
      actionButton('Cancel', 'cancel', { id: t.id }, 'cancel task ' + t.id, true)),
    dl,
    h('h2', {}, 'Error'), h('pre', { id: 'task-error' }, t.last_error || ''),
    'payload' in t ? [h('h2', {}, 'Payload'), json(t.payload), h('h2', {}, 'Result'), json(t.result)]
      : h('p', { class: 'muted' }, 'Payload and result are not in the monitor\'s views.')));
}

// Workflows: a run as a graph, columns by depth along depends_on.
const runView = { id: null };

pages.workflows = {
  init(app) {
    app.append(h('h1', {}, 'Workflows'),
      h('form', { class: 'filters', onsubmit: (ev) => { ev.preventDefault(); runView.id = ev.target.elements.run.value || null; refresh(); } },
        h('label', {}, 'run id', h('input', { name: 'run', id: 'run-id', size: 8, value: runView.id || '' })),
        h('button', { type: 'submit', id: 'run-show' }, 'Show')),
      h('div', { id: 'run-view' }), h('h2', {}, 'Runs'), h('div', { id: 'run-list' }));
  },
  async load(current) {
    const runs = await api('runs');
    let run = null;
    if (runView.id) run = await api('run', { id: runView.id });
    if (!current()) return;
    clear($('run-list')).append(table([
      { title: 'run', key: 'id', num: true }, { title: 'name', key: 'name' }, { title: 'status', cell: (r) => badge(r.status) },
      { title: 'policy', key: 'failure_policy' }, { title: 'created', cell: (r) => fmtTime(r.created_at) },
    ], runs.runs, (r) => ({ class: 'clickable', 'data-run': r.id, onclick: () => { runView.id = r.id; $('run-id').value = r.id; refresh(); } })));
    const v = clear($('run-view'));
    if (run) v.append(drawRun(run));
  },
};

// The console draws at most this many tasks of a run (it is sent one more
// when there are more).
const RUN_TASKS_MAX = 500;

function drawRun(d) {
  const all = Array.isArray(d.tasks) ? d.tasks : [];
  const more = all.length > RUN_TASKS_MAX;
  const tasks = all.slice(0, RUN_TASKS_MAX);
  const info = d.run && d.run.error === undefined ? d.run : null;
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const depth = new Map();
  const depthOf = (t, seen) => {
    if (depth.has(t.id)) return depth.get(t.id);
    if (seen.has(t.id)) return 0;
    seen.add(t.id);
    let dd = 0;
    for (const p of t.depends_on || []) if (byId.has(p)) dd = Math.max(dd, depthOf(byId.get(p), seen) + 1);
    depth.set(t.id, dd);
    return dd;
  };
  const cols = [];
  for (const t of tasks) { const dd = depthOf(t, new Set()); (cols[dd] = cols[dd] || []).push(t); }
  const NW = 170; const NH = 46; const GX = 70; const GY = 18; const P = 12;
  const pos = new Map();
  cols.forEach((col, c) => col.forEach((t, r) => pos.set(t.id, { x: P + c * (NW + GX), y: P + r * (NH + GY) })));
  const W = P * 2 + Math.max(1, cols.length) * (NW + GX) - GX;
  const H = P * 2 + Math.max(1, ...cols.map((c) => c.length)) * (NH + GY) - GY;
  const svg = s('svg', { width: W, height: H, viewBox: `0 0 ${W} ${H}`, id: 'run-graph', role: 'img', 'aria-label': 'workflow graph' });
  svg.append(s('defs', {}, s('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto' },
    s('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#7b8794' }))));
  for (const t of tasks) {
    for (const p of t.depends_on || []) {
      const a = pos.get(p); const b = pos.get(t.id);
      if (!a || !b) continue;
      const x1 = a.x + NW; const y1 = a.y + NH / 2; const x2 = b.x; const y2 = b.y + NH / 2;
      svg.append(s('path', { d: `M${x1},${y1} C${x1 + GX / 2},${y1} ${x2 - GX / 2},${y2} ${x2},${y2}`, fill: 'none',
        stroke: '#7b8794', 'marker-end': 'url(#arrow)', 'data-edge': p + '-' + t.id }));
    }
  }
  for (const t of tasks) {
    const p = pos.get(t.id);
    const color = STATUS_COLORS[t.status] || '#9aa5b1';
    const g = s('g', { 'data-task': t.id, 'data-status': t.status, class: 'node' },
      s('title', {}, '#' + t.id + ' ' + t.kind + ' — ' + t.status + (t.last_error ? ': ' + t.last_error : '')),
      s('rect', { x: p.x, y: p.y, width: NW, height: NH, rx: 6, fill: color, stroke: '#102a43',
        'stroke-dasharray': t.status === 'skipped' || t.status === 'canceled' ? '4 3' : null }),
      s('text', { x: p.x + 8, y: p.y + 18, fill: '#fff' }, ('#' + t.id + ' ' + t.kind).slice(0, 26)),
      s('text', { x: p.x + 8, y: p.y + 35, fill: '#fff' }, t.status + (t.progress !== null && t.status === 'running' ? ' ' + Math.round(t.progress) + '%' : '')));
    g.addEventListener('click', () => { taskView.selected = t.id; location.hash = '#tasks'; });
    svg.append(g);
  }
  const counts = {};
  for (const t of tasks) counts[t.status] = (counts[t.status] || 0) + 1;
  const doneN = counts.done || 0;
  return h('div', {},
    h('h2', {}, 'Run ' + (info ? info.id : '') + (info && info.name ? ' ' + info.name : ''), info ? [' ', badge(info.status)] : null),
    h('p', { id: 'run-summary' },
      (info ? 'failure policy: ' + info.failure_policy + ' · ' : '') +
      'progress: ' + doneN + ' of ' + tasks.length + ' done · ' +
      STATUSES.filter((st) => counts[st]).map((st) => st + ' ' + counts[st]).join(', ') +
      (info && info.failure_policy === 'halt' && counts.canceled ? ' · halted: its live tasks were canceled' : '') +
      (info && info.status === 'canceled' ? ' · canceled' : '')),
    more ? h('p', { id: 'run-truncated', class: 'muted' },
      'Showing the first ' + RUN_TASKS_MAX + ' tasks of the run (by id); the counts above are of those. ' +
      'All of them: schedqctl list --run ' + runView.id + '.') : null,
    denied(d.run),
    h('div', { class: 'graph' }, svg),
    h('div', { class: 'legend' }, STATUSES.map((st) => h('span', {}, h('span', { class: 'swatch', 'data-color': STATUS_COLORS[st] }), st))),
    tasks.filter((t) => t.last_error).map((t) => h('p', { class: 'muted' }, '#' + t.id + ': ' + t.last_error)));
}

pages.schedules = {
  init(app) { app.append(h('h1', {}, 'Schedules'), h('div', { id: 'schedule-list' })); },
  async load(current) {
    const d = await api('schedules');
    if (!current()) return;
    clear($('schedule-list')).append(d.length === 0 ? h('p', { class: 'muted' }, 'No schedule.') : table([
      { title: 'name', key: 'name' }, { title: 'schedule', key: 'schedule' }, { title: 'time zone', key: 'timezone' },
      { title: 'enabled', cell: (r) => (r.enabled ? 'yes' : 'no') }, { title: 'next run', cell: (r) => fmtTime(r.next_run) },
      { title: 'last run', cell: (r) => fmtTime(r.last_run) }, { title: 'kind', key: 'kind' }, { title: 'queue', key: 'queue' },
      { title: 'owner', key: 'owner' }, { title: 'fired', key: 'fired', num: true }, { title: 'skipped', key: 'skipped', num: true },
      { title: 'last error', key: 'last_error' },
      { title: '', cell: (r) => (r.enabled ? actionButton('Disable', 'disable', { name: r.name }, 'disable ' + r.name)
        : actionButton('Enable', 'enable', { name: r.name }, 'enable ' + r.name)) },
      { title: '', cell: (r) => (r.enabled ? actionButton('Run now', 'run', { name: r.name }, 'run ' + r.name) : null) },
    ], d, (r) => ({ 'data-schedule': r.name })));
  },
};

pages.gates = {
  init(app) {
    app.append(h('h1', {}, 'Gates'), h('h2', {}, 'Exclusive keys (lock_key)'), h('div', { id: 'gate-locks' }),
      h('h2', {}, 'Concurrency limits'), h('div', { id: 'gate-limits' }),
      session.readOnly ? null : h('form', { class: 'filters', id: 'limit-form', onsubmit: (ev) => {
        ev.preventDefault();
        const el = ev.target.elements;
        act('limit', { key: el.key.value, max: el.max.value }, 'limit of ' + el.key.value);
      } }, h('label', {}, 'key', h('input', { name: 'key', id: 'limit-key', required: true })),
      h('label', {}, 'max active (empty: no limit)', h('input', { name: 'max', id: 'limit-max', size: 6 })),
      h('button', { type: 'submit', id: 'limit-set', 'data-action': 'limit' }, 'Set limit')),
      h('h2', {}, 'Budgets'), h('div', { id: 'gate-budgets' }));
  },
  async load(current) {
    const d = await api('gates');
    if (!current()) return;
    const put = (id, value, cols, attrs) => {
      const box = clear($(id));
      box.append(denied(value) || (value.length === 0 ? h('p', { class: 'muted' }, 'None.') : table(cols, value, attrs)));
    };
    put('gate-locks', d.locks, [{ title: 'key', key: 'lock_key' }, { title: 'held by task', key: 'holder', num: true },
      { title: 'held', key: 'held', num: true }, { title: 'waiting', key: 'waiting', num: true }], (r) => ({ 'data-lock': r.lock_key }));
    put('gate-limits', d.limits, [{ title: 'key', key: 'key' }, { title: 'limit', key: 'max_active', num: true },
      { title: 'active', key: 'active', num: true }, { title: 'waiting', key: 'waiting', num: true }], (r) => ({ 'data-limit': r.key }));
    put('gate-budgets', d.budgets, [{ title: 'budget', key: 'name' }, { title: 'used', key: 'used', num: true },
      { title: 'limit', key: 'hard_limit', num: true }, { title: 'period', key: 'period' },
      { title: 'usage', cell: (r) => { const bar = h('div', {}); bar.style.width = Math.min(100, (100 * r.used) / (r.hard_limit || 1)) + '%'; return h('div', { class: 'bar' }, bar); } }]);
  },
};

pages.workers = {
  init(app) { app.append(h('h1', {}, 'Workers'), h('div', { id: 'worker-list' }), h('h2', {}, 'Running tasks and their leases'), h('div', { id: 'worker-running' })); },
  async load(current) {
    const d = await api('workers');
    if (!current()) return;
    clear($('worker-list')).append(denied(d.workers) || table([
      { title: 'worker', key: 'worker' }, { title: 'running', key: 'running', num: true }, { title: 'recently finished', key: 'recent', num: true },
      { title: 'last claim', cell: (r) => fmtTime(r.last_seen) }], d.workers, (r) => ({ 'data-worker': r.worker })));
    const now = Date.now();
    clear($('worker-running')).append(denied(d.running) || table([
      { title: 'task', key: 'id', num: true }, { title: 'worker', key: 'claimed_by' }, { title: 'queue', key: 'queue' },
      { title: 'kind', key: 'kind' }, { title: 'attempt', key: 'attempts', num: true }, { title: 'started', cell: (r) => fmtTime(r.started_at) },
      { title: 'lease expires', cell: (r) => fmtTime(r.lease_expires_at) + ' (' + Math.round((Date.parse(r.lease_expires_at) - now) / 1000) + ' s)' },
      { title: 'progress', cell: (r) => (r.progress === null ? '' : Math.round(r.progress) + '% ' + (r.progress_note || '')) },
    ], d.running));
  },
};

// --- start --------------------------------------------------------------------------

document.addEventListener('DOMContentLoaded', async () => {
  $('login-form').addEventListener('submit', signIn);
  $('signout').addEventListener('click', signOut);
  window.addEventListener('hashchange', route);
  const r = await fetch('/api/session', { credentials: 'same-origin' });
  const b = await r.json();
  if (b.signedIn) start(b);
  else { loginToken = b.loginToken; showLogin(); }
});
