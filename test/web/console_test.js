// test/web/console_test.js
//   Drives Debian's chromium (playwright-core, pinned by package-lock.json)
//   against two running `schedqctl web` servers, one read-write (WEB_URL)
//   and one --read-only (WEB_RO_URL), for test/t/056_web_console.pl, which
//   starts them, makes the roles and the data, and reads this script's
//   output: one line "ok - NAME" or "not ok - NAME: WHY" per check, then
//   "done".  Database changes during the test go through psql (PSQL_CONN, a
//   superuser's conninfo).  Screenshots of each page go to SHOTS_DIR.
'use strict';

const { chromium } = require('playwright-core');
const { execFileSync } = require('child_process');
const path = require('path');

const URL = process.env.WEB_URL;
const RO_URL = process.env.WEB_RO_URL;
const SHOTS = process.env.SHOTS_DIR;
const PASS = process.env.ROLE_PASSWORD;
const RUN_ID = process.env.RUN_ID;
const HOSTILE = process.env.HOSTILE_KIND;
const T = 20000;

function psql(sql) {
  return execFileSync('psql', ['-X', '-At', '-v', 'ON_ERROR_STOP=1', '-d', process.env.PSQL_CONN, '-c', sql],
    { encoding: 'utf8' }).trim().split('\n').pop();
}

// Poll a query until it returns want (or T passes).
async function psqlUntil(sql, want) {
  const end = Date.now() + T;
  for (;;) {
    const v = psql(sql);
    if (v === want) return v;
    if (Date.now() > end) throw new Error(sql + ': ' + v + ', not ' + want);
    await new Promise((r) => setTimeout(r, 100));
  }
}

let failures = 0;
function report(name, ok, why) {
  if (ok) console.log('ok - ' + name);
  else { failures++; console.log('not ok - ' + name + ': ' + String(why).replace(/\n/g, ' ')); }
}
async function check(name, fn) {
  try { await fn(); report(name, true); } catch (e) { report(name, false, e && e.message ? e.message : e); }
}
function assert(cond, why) { if (!cond) throw new Error(why); }

// Wait until fn (run in the page) returns a true value.  Not playwright's
// waitForFunction: it evaluates strings, which the console's CSP forbids.
async function until(page, fn, arg) {
  const end = Date.now() + T;
  for (;;) {
    let v = false;
    try { v = await page.evaluate(fn, arg); } catch (e) { v = false; }
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out waiting for ' + fn.toString().slice(0, 160));
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function newPage(browser, base) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 820 } });
  const page = await context.newPage();
  page.dialogs = [];
  page.on('dialog', (d) => { page.dialogs.push(d.message()); d.dismiss().catch(() => {}); });
  page.cspErrors = [];
  page.on('console', (m) => { if (/Content Security Policy/.test(m.text())) page.cspErrors.push(m.text()); });
  await page.goto(base + '/');
  return page;
}

async function signIn(page, user, password) {
  await page.waitForSelector('#login-form', { state: 'visible', timeout: T });
  await page.fill('#login-user', user);
  await page.fill('#login-password', password);
  await page.click('#login-submit');
}

async function signedIn(page, user) {
  await until(page, (u) => document.getElementById('who').textContent.startsWith(u + ' @'), user);
}

async function go(page, name) {
  await page.evaluate((n) => { location.hash = '#' + n; }, name);
  await until(page, (n) => document.getElementById('app').dataset.page === n, name);
}

async function cell(page, queue, col) {
  return page.evaluate(([q, c]) => {
    for (const tr of document.querySelectorAll('#ov-queues tr[data-queue]')) {
      if (tr.dataset.queue === q) { const td = tr.querySelector(`td[data-col="${c}"]`); return td ? td.textContent : null; }
    }
    return null;
  }, [queue, col]);
}

async function waitCell(page, queue, col, want) {
  await until(page, ([q, c, w]) => {
    for (const tr of document.querySelectorAll('#ov-queues tr[data-queue]')) {
      if (tr.dataset.queue === q) { const td = tr.querySelector(`td[data-col="${c}"]`); return td && td.textContent === w; }
    }
    return false;
  }, [queue, col, String(want)]);
}

async function message(page, re) {
  await until(page, (src) => {
    const m = document.getElementById('message');
    return !m.hidden && new RegExp(src).test(m.textContent);
  }, re.source);
  return page.textContent('#message');
}

async function shot(page, name) {
  await page.waitForTimeout(300);
  await page.screenshot({ path: path.join(SHOTS, name + '.png'), fullPage: false });
}

async function post(page, url, body, token) {
  return page.evaluate(async ([u, b, t]) => {
    const headers = { 'Content-Type': 'application/x-www-form-urlencoded' };
    if (t) headers['X-CSRF-Token'] = t;
    const r = await fetch(u, { method: 'POST', headers, body: new URLSearchParams(b) });
    return { status: r.status, body: await r.text() };
  }, [url, body, token]);
}

(async () => {
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
  try {
    // A wrong password: a generic refusal (the reason is in the console's log), no session.
    const p0 = await newPage(browser, URL);
    await check('a wrong password cannot sign in', async () => {
      await signIn(p0, 'ops', 'not-the-password');
      await p0.waitForSelector('#login-error:not([hidden])', { timeout: T });
      const err = await p0.textContent('#login-error');
      assert(/sign-in failed/.test(err), 'error: ' + err);
      const s = await p0.evaluate(async () => (await fetch('/api/session')).json());
      assert(s.signedIn === false, 'signed in after all');
      const r = await p0.evaluate(async () => (await fetch('/api/overview')).status);
      assert(r === 401, 'overview answered ' + r);
    });
    await shot(p0, 'signin');

    // The admin: overview counts follow submits and work.
    const page = await newPage(browser, URL);
    await check('the admin signs in: a 256-bit HttpOnly SameSite=Strict session cookie', async () => {
      await signIn(page, 'ops', PASS);
      await signedIn(page, 'ops');
      const c = (await page.context().cookies()).find((x) => x.name === 'schedq_session');
      assert(c && c.httpOnly && c.sameSite === 'Strict' && /^[0-9a-f]{64}$/.test(c.value), JSON.stringify(c));
      assert(await page.evaluate(() => !document.cookie.includes('schedq_session')), 'the page script reads the cookie');
    });
    await check('overview: counts change as tasks are submitted and worked', async () => {
      await page.waitForSelector('#ov-queues tr[data-queue="alpha"]', { timeout: T });
      const before = Number(await cell(page, 'alpha', 'available'));
      const doneBefore = Number(await cell(page, 'alpha', 'done'));
      psql("SET ROLE app; SELECT schedq.submit('resize', queue => 'alpha') FROM generate_series(1, 5)");
      await waitCell(page, 'alpha', 'available', before + 5);
      psql("SELECT count(schedq.complete(token, '{}')) FROM schedq.claim('w-test', queues => '{alpha}', n => 5)");
      await waitCell(page, 'alpha', 'done', doneBefore + 5);
      // few tasks finished: the counts are of the whole hour
      const heads = await page.evaluate(() => [...document.querySelectorAll('#ov-queues th')].map((x) => x.textContent));
      assert(heads.includes('done, last hour') && heads.includes('failed, last hour'), JSON.stringify(heads));
      await page.waitForSelector('#chart-rate polyline', { state: 'attached', timeout: T });
      await page.waitForSelector('#chart-latency polyline', { state: 'attached', timeout: T });
    });
    await check('overview: pending tasks by gate, per queue', async () => {
      // queue locks: the second task of lock key account-1 is parked behind it
      await waitCell(page, 'locks', 'pending_lock', 1);
      // queue gated: one for later, one over the limit of gpu (2), one behind a dependency
      psql("SET ROLE app; SELECT schedq.submit('later', queue => 'gated', run_at => now() + interval '1 hour')");
      psql("SET ROLE app; SELECT schedq.submit('render-gpu', queue => 'gated', concurrency_key => 'gpu') FROM generate_series(1, 3)");
      psql("SET ROLE app; SELECT schedq.submit('second', queue => 'gated', run_id => r, " +
        "depends_on => ARRAY[schedq.submit('first', queue => 'gated', run_id => r)]) FROM schedq.create_run('gates') r");
      await waitCell(page, 'gated', 'pending_time', 1);
      await waitCell(page, 'gated', 'pending_limit', 1);
      await waitCell(page, 'gated', 'pending_deps', 1);
      await waitCell(page, 'gated', 'pending', 3);
      assert(await cell(page, 'gated', 'pending_lock') === '0', 'lock key in gated');
      assert(await cell(page, 'locks', 'pending_time') === '0', 'time in locks');
      const heads = await page.evaluate(() => [...document.querySelectorAll('#ov-queues th')].map((x) => x.textContent));
      assert(heads.includes('waiting: lock key') && heads.includes('waiting: dependencies'), JSON.stringify(heads));
    });
    await check('overview: the scheduler of the database shows', async () => {
      await until(page, () => /idle|promoting|reaping/.test(document.getElementById('ov-schedulers').textContent), null);
    });
    await shot(page, 'overview');

    // Tasks: filters and keyset pages.
    await go(page, 'tasks');
    await check('tasks: filters by queue and status', async () => {
      await page.fill('#task-filters input[name=queue]', 'alpha');
      await page.selectOption('#task-filters select[name=status]', 'done');
      await page.click('#task-search');
      // every row of the filtered list: alpha, done (the unfiltered list
      // shows others until the answer arrives)
      await until(page, () => {
        const rows = [...document.querySelectorAll('#task-list tr[data-id]')];
        return rows.length === 5 && rows.every((tr) => tr.children[1].textContent === 'alpha' && tr.children[3].textContent === 'done');
      }, null);
    });
    await check('tasks: keyset pages, newest first, each page older than the last', async () => {
      const all = psql("SELECT string_agg(id::text, ',' ORDER BY id DESC) FROM schedq.task WHERE queue = 'alpha' AND status = 'done'").split(',');
      await page.fill('#task-filters input[name=limit]', '2');
      const requests = [];
      page.on('request', (r) => { if (r.url().includes('/api/tasks')) requests.push(r.url()); });
      await page.click('#task-search');
      const seen = [];
      for (let i = 0; i < 10; i++) {
        await until(page, (n) => document.getElementById('task-page').textContent.startsWith('page ' + n), i + 1);
        if (i === 0) {
          await until(page, (first) => {
            const rows = document.querySelectorAll('#task-list tr[data-id]');
            return rows.length === 2 && rows[0].dataset.id === first;
          }, all[0]);
        }
        const ids = await page.$$eval('#task-list tr[data-id]', (trs) => trs.map((tr) => tr.dataset.id));
        seen.push(...ids);
        if (await page.isDisabled('#task-next')) break;
        await page.click('#task-next');
      }
      assert(JSON.stringify(seen) === JSON.stringify(all), 'pages ' + seen + ' vs ' + all);
      assert(requests.some((u) => /before=\d+/.test(u)) && !requests.some((u) => /offset/i.test(u)), 'requests: ' + requests.join(' '));
    });
    await check('tasks: find by id shows payload, result, error and attempts', async () => {
      const id = psql("SELECT id FROM schedq.task WHERE kind = 'charge' AND status = 'failed' LIMIT 1");
      await page.fill('#task-filters input[name=queue]', '');
      await page.selectOption('#task-filters select[name=status]', '');
      await page.fill('#task-filters input[name=limit]', '');
      await page.fill('#task-filters input[name=id]', id);
      await page.click('#task-search');
      await page.waitForSelector('#task-' + id, { timeout: T });
      const txt = await page.textContent('#task-' + id);
      assert(/card declined/.test(txt) && /"amount": 42/.test(txt), txt);
    });
    await shot(page, 'tasks');
    await check('tasks: find by dedup key', async () => {
      await page.fill('#task-filters input[name=id]', '');
      await page.fill('#task-filters input[name=dedup]', 'order-7');
      await page.click('#task-search');
      await until(page, () => {
        const rows = document.querySelectorAll('#task-list tr[data-id]');
        return rows.length === 1 && rows[0].children[2].textContent === 'invoice';
      }, null);
      await page.fill('#task-filters input[name=dedup]', '');
    });

    // The hostile kind shows as text and runs nothing.
    await check('a hostile task kind is inert text', async () => {
      await page.evaluate(() => { window.__pwned = false; });
      await page.fill('#task-filters input[name=kind]', HOSTILE);
      await page.click('#task-search');
      await until(page, (k) => [...document.querySelectorAll('#task-list td')].some((td) => td.textContent === k), HOSTILE);
      await page.click('#task-list tr[data-id]');
      await page.waitForSelector('.detail', { timeout: T });
      await page.waitForTimeout(1000);
      const pwned = await page.evaluate(() => window.__pwned);
      const imgs = await page.$$eval('#app img', (l) => l.length);
      assert(pwned === false && page.dialogs.length === 0 && imgs === 0, `pwned=${pwned} dialogs=${page.dialogs} imgs=${imgs}`);
      await page.fill('#task-filters input[name=kind]', '');
    });

    // Workflows: a failed node and the skipped one after it.
    await go(page, 'workflows');
    await check('workflows: the run\'s graph, a failed and a skipped node, edges', async () => {
      await page.fill('#run-id', RUN_ID);
      await page.click('#run-show');
      await page.waitForSelector('#run-graph g[data-status="failed"]', { timeout: T });
      await page.waitForSelector('#run-graph g[data-status="skipped"]', { timeout: T });
      const edges = await page.$$eval('#run-graph path[data-edge]', (l) => l.length);
      const summary = await page.textContent('#run-summary');
      assert(edges >= 2 && /failure policy: continue/.test(summary), `edges ${edges}, ${summary}`);
    });
    await shot(page, 'workflows');

    // Actions, as the admin.
    await go(page, 'overview');
    await check('action: pause and resume a queue', async () => {
      await page.click('#ov-queues tr[data-queue="alpha"] button[data-action="pause"]');
      await message(page, /pause alpha: done/);
      assert(psql("SELECT paused FROM schedq.queue WHERE name = 'alpha'") === 't', 'not paused');
      await until(page, () => /Paused: .*alpha/.test(document.getElementById('ov-paused').textContent), null);
      await page.click('#ov-queues tr[data-queue="alpha"] button[data-action="resume"]');
      await message(page, /resume alpha: done/);
      assert(psql("SELECT paused FROM schedq.queue WHERE name = 'alpha'") === 'f', 'still paused');
    });
    await go(page, 'tasks');
    await check('action: retry a failed task, cancel a live one', async () => {
      const failed = psql("SELECT id FROM schedq.task WHERE kind = 'charge' AND status = 'failed' LIMIT 1");
      await page.fill('#task-filters input[name=id]', failed);
      await page.click('#task-search');
      await page.waitForSelector(`#task-${failed} button[data-action="retry"]`, { timeout: T });
      await page.click(`#task-${failed} button[data-action="retry"]`);
      await message(page, new RegExp('retry task ' + failed + ': done'));
      assert(['pending', 'available'].includes(psql('SELECT status FROM schedq.task WHERE id = ' + failed)), 'not retried');
      await page.click(`#task-${failed} button[data-action="cancel"]`);
      await message(page, new RegExp('cancel task ' + failed + ': done'));
      assert(psql('SELECT status FROM schedq.task WHERE id = ' + failed) === 'canceled', 'not canceled');
      await page.fill('#task-filters input[name=id]', '');
    });
    await go(page, 'schedules');
    await check('action: disable and enable a schedule', async () => {
      await page.click('tr[data-schedule="weekly"] button[data-action="disable"]');
      await message(page, /disable weekly: done/);
      assert(psql("SELECT enabled FROM schedq.periodic WHERE name = 'weekly'") === 'f', 'still enabled');
      await page.click('tr[data-schedule="weekly"] button[data-action="enable"]');
      await message(page, /enable weekly: done/);
      assert(psql("SELECT enabled FROM schedq.periodic WHERE name = 'weekly'") === 't', 'not enabled');
    });
    await check('action: another role\'s schedule keeps its owner', async () => {
      await page.click('tr[data-schedule="nightly"] button[data-action="disable"]');
      await message(page, /disable nightly: done/);
      assert(psql("SELECT owner::text || ' ' || enabled FROM schedq.periodic WHERE name = 'nightly'") === 'app false', 'taken over');
      await page.click('tr[data-schedule="nightly"] button[data-action="enable"]');
      await message(page, /enable nightly: done/);
      assert(psql("SELECT owner::text || ' ' || enabled FROM schedq.periodic WHERE name = 'nightly'") === 'app true', 'taken over');
    });
    await check('action: run a schedule now, its owner; again while its task is live: refused (55006)', async () => {
      const promised = psql("SELECT next_task_id FROM schedq.periodic WHERE name = 'weekly'");
      const regular = psql("SELECT next_run FROM schedq.periodic WHERE name = 'weekly'");
      await page.click('tr[data-schedule="weekly"] button[data-action="run"]');
      await message(page, new RegExp('run weekly: done, task #' + promised));
      await psqlUntil(`SELECT status || ' ' || periodic FROM schedq.task WHERE id = ${promised}`, 'available weekly');
      assert(psql("SELECT next_run FROM schedq.periodic WHERE name = 'weekly'") === regular, 'the cadence moved');
      await page.click('tr[data-schedule="weekly"] button[data-action="run"]');
      const m = await message(page, /run weekly: the last task of periodic task "weekly" is still available \(SQLSTATE 55006\)/);
      assert(/never overlaps itself/.test(m), m);
      assert(psql("SELECT count(*) FROM schedq.task WHERE periodic = 'weekly'") === '1', 'a second task');
    });
    await shot(page, 'schedules');
    await go(page, 'gates');
    await check('action: set a concurrency limit; gates show keys, limits, budgets', async () => {
      await page.fill('#limit-key', 'smtp');
      await page.fill('#limit-max', '3');
      await page.click('#limit-set');
      await message(page, /limit of smtp: done/);
      assert(psql("SELECT max_active FROM schedq.concurrency_limit WHERE key = 'smtp'") === '3', 'limit not set');
      await page.waitForSelector('tr[data-limit="smtp"]', { timeout: T });
      await page.waitForSelector('tr[data-lock="account-1"]', { timeout: T });
      await until(page, () => /llm/.test(document.getElementById('gate-budgets').textContent), null);
    });
    await shot(page, 'gates');
    await go(page, 'workers');
    await check('workers: who holds which task, and its lease', async () => {
      await until(page, () => /w-busy/.test(document.getElementById('worker-running').textContent) &&
        /lease/i.test(document.getElementById('worker-running').textContent), null);
    });
    await shot(page, 'workers');

    // CSRF: a POST without the token is refused.
    await check('a POST without the CSRF token is refused (403)', async () => {
      const r = await post(page, '/api/action/pause', { queue: 'alpha' }, null);
      const r2 = await post(page, '/api/action/pause', { queue: 'alpha' }, 'f'.repeat(64));
      assert(r.status === 403 && r2.status === 403, JSON.stringify([r, r2]));
      assert(psql("SELECT coalesce((SELECT paused FROM schedq.queue WHERE name = 'alpha'), false)") === 'f', 'paused anyway');
    });
    await check('answers carry nosniff, a strict CSP and JSON', async () => {
      const h = await page.evaluate(async () => {
        const r = await fetch('/api/overview');
        return [r.headers.get('content-type'), r.headers.get('x-content-type-options'), r.headers.get('content-security-policy')];
      });
      assert(/^application\/json/.test(h[0]) && h[1] === 'nosniff' && /script-src 'self'/.test(h[2]) && !/unsafe-inline/.test(h[2]), JSON.stringify(h));
      assert(page.cspErrors.length === 0, 'CSP violations: ' + page.cspErrors.join(' '));
    });

    // A role that may not: the database's refusal, for every action.
    const mon = await newPage(browser, URL);
    await check('the monitor signs in and reads through the all_ views', async () => {
      await signIn(mon, 'oncall', PASS);
      await signedIn(mon, 'oncall');
      await mon.waitForSelector('#ov-queues tr[data-queue="alpha"]', { timeout: T });
      const who = await mon.textContent('#who');
      assert(/monitor views/.test(who), who);
    });
    await shot(mon, 'overview-monitor');
    await check('the monitor: pause refused with the database\'s error', async () => {
      await mon.click('#ov-queues tr[data-queue="alpha"] button[data-action="pause"]');
      const m = await message(mon, /permission denied/);
      assert(/permission denied for function pause_queue/.test(m) && /42501/.test(m), m);
    });
    await check('the monitor: every other action refused by the database (42501)', async () => {
      const csrf = await mon.evaluate(async () => (await (await fetch('/api/session')).json()).csrf);
      const id = psql("SELECT min(id) FROM schedq.task WHERE status = 'done'");
      const tries = [['retry', { id }], ['cancel', { id }], ['resume', { queue: 'alpha' }], ['limit', { key: 'smtp', max: '9' }],
        ['disable', { name: 'nightly' }], ['enable', { name: 'nightly' }], ['run', { name: 'nightly' }]];
      for (const [a, b] of tries) {
        const r = await post(mon, '/api/action/' + a, b, csrf);
        const body = JSON.parse(r.body);
        assert(r.status === 403 && body.sqlstate === '42501' && /permission denied/.test(body.error), a + ': ' + r.body);
      }
      assert(psql("SELECT max_active FROM schedq.concurrency_limit WHERE key = 'smtp'") === '3', 'limit changed');
    });
    await check('the monitor: Run now refused with the database\'s error', async () => {
      await go(mon, 'schedules');
      await mon.click('tr[data-schedule="nightly"] button[data-action="run"]');
      const m = await message(mon, /run nightly: permission denied/);
      assert(/permission denied for function run_schedule_now/.test(m) && /42501/.test(m), m);
      assert(psql("SELECT count(*) FROM schedq.task WHERE periodic = 'nightly'") === '0', 'it ran');
    });
    await check('the monitor: task detail without payload', async () => {
      await go(mon, 'tasks');
      await mon.waitForSelector('#task-list tr[data-id]', { timeout: T });
      await mon.click('#task-list tr[data-id]');
      await until(mon, () => /not in the monitor/.test(document.getElementById('task-detail').textContent), null);
    });
    const sub = await newPage(browser, URL);
    await check('the submitter: pause refused, cancel of its own task allowed', async () => {
      await signIn(sub, 'app', PASS);
      await signedIn(sub, 'app');
      await sub.waitForSelector('#ov-queues tr[data-queue="alpha"] button[data-action="pause"]', { timeout: T });
      await sub.click('#ov-queues tr[data-queue="alpha"] button[data-action="pause"]');
      const m = await message(sub, /permission denied/);
      assert(/pause_queue/.test(m), m);
      const csrf = await sub.evaluate(async () => (await (await fetch('/api/session')).json()).csrf);
      const id = psql("SET ROLE app; SELECT schedq.submit('to-cancel', queue => 'beta')");
      const r = await post(sub, '/api/action/cancel', { id }, csrf);
      assert(r.status === 200 && psql('SELECT status FROM schedq.task WHERE id = ' + id) === 'canceled', r.body);
    });

    // Read-only: no action offered, a forged POST refused.
    const ro = await newPage(browser, RO_URL);
    await check('read-only: signs in, offers no action', async () => {
      await signIn(ro, 'ops', PASS);
      await signedIn(ro, 'ops');
      await ro.waitForSelector('#ov-queues tr[data-queue="alpha"]', { timeout: T });
      for (const p of ['overview', 'schedules', 'gates']) {
        await go(ro, p);
        await ro.waitForTimeout(800);
        const n = await ro.$$eval('[data-action]', (l) => l.length);
        assert(n === 0, p + ': ' + n + ' action controls');
      }
    });
    await check('read-only: a forged POST with the CSRF token is refused', async () => {
      const csrf = await ro.evaluate(async () => (await (await fetch('/api/session')).json()).csrf);
      const r = await post(ro, '/api/action/pause', { queue: 'alpha' }, csrf);
      assert(r.status === 403 && /read-only/.test(r.body), JSON.stringify(r));
      assert(psql("SELECT coalesce((SELECT paused FROM schedq.queue WHERE name = 'alpha'), false)") === 'f', 'paused anyway');
    });
    await check('no script ran from the database in any page', async () => {
      for (const p of [p0, page, mon, sub, ro]) {
        const pw = await p.evaluate(() => window.__pwned === true);
        assert(!pw && p.dialogs.length === 0, 'a dialog or __pwned');
      }
    });
    // Bounded reads: a backlog beyond 10,000 shows as 10000+, a busy hour
    // counts over the shorter window its newest 1,000 span, a busy minute of
    // the charts is estimated, the workers come from the newest finished.
    await check('overview, charts, workers: bounded reads of a large table, and what they say', async () => {
      psql(`INSERT INTO schedq.task (kind, queue, status, owner, run_at, created_at)
              SELECT 'bulk', 'bulk', 'available', 'app'::regrole, now(), now() FROM generate_series(1, 10005);
            INSERT INTO schedq.task (kind, queue, status, owner, attempts, run_at, created_at, started_at, finished_at, claimed_by)
              SELECT 'bulk', 'bulk', 'done', 'app'::regrole, 1, t, t, t, t, 'w-bulk'
              FROM generate_series(1, 2000) g, LATERAL (SELECT now() - g * interval '1 millisecond') x(t)`);
      const d = await page.evaluate(async () => [await (await fetch('/api/overview')).json(),
        await (await fetch('/api/charts')).json(), await (await fetch('/api/workers')).json()]);
      const q = d[0].overview.queues.find((x) => x.queue === 'bulk');
      assert(q && q.available === 10000 && q.available_more === true && q.done === 1000, JSON.stringify(q));
      assert(d[0].overview.done_window_s < 60, 'window ' + d[0].overview.done_window_s);
      assert(d[1].minutes.some((m) => m.estimated && m.done > 500), JSON.stringify(d[1].minutes.slice(-2)));
      const w = d[2].workers.find((x) => x.worker === 'w-bulk');
      assert(w && w.recent === 1000, JSON.stringify(w));
      await go(page, 'overview');
      await waitCell(page, 'bulk', 'available', '10000+');
      await page.waitForSelector('#chart-estimated', { timeout: T });
    });

    // --read-only --no-sign-in: -d's role (the monitor), for everyone.
    const open = await newPage(browser, process.env.WEB_OPEN_URL);
    await check('--no-sign-in: no sign-in page, -d\'s role, no action, no sign-out', async () => {
      await signedIn(open, 'oncall');
      await open.waitForSelector('#ov-queues tr[data-queue="alpha"]', { timeout: T });
      const n = await open.$$eval('[data-action]', (l) => l.length);
      const so = await open.isHidden('#signout');
      const login = await open.isHidden('#login');
      assert(n === 0 && so && login, `actions ${n}, sign-out hidden ${so}, login hidden ${login}`);
    });

    // Bounds and HTTPS, without a browser.
    await check('a body over 8 KB is refused (413), a body not a form (415)', async () => {
      const big = await fetch(URL + '/api/login', { method: 'POST', body: 'x'.repeat(20000),
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
      const json = await fetch(URL + '/api/login', { method: 'POST', body: '{}', headers: { 'Content-Type': 'application/json' } });
      const none = await fetch(URL + '/api/nothing');
      assert(big.status === 413 && json.status === 415 && none.status === 401, [big.status, json.status, none.status].join(' '));
    });
    if (process.env.WEB_TLS_URL) {
      await check('HTTPS with --tls-cert and --tls-key: Secure __Host- cookies, HSTS', async () => {
        const ctx = await browser.newContext({ ignoreHTTPSErrors: true });
        const tp = await ctx.newPage();
        const r = await tp.goto(process.env.WEB_TLS_URL + '/api/session');
        const h = await r.allHeaders();
        assert(r.status() === 200 && /^__Host-schedq_login=/.test(h['set-cookie']) && /Secure/.test(h['set-cookie']) &&
          /HttpOnly/.test(h['set-cookie']) && /SameSite=Strict/.test(h['set-cookie']) &&
          /max-age/.test(h['strict-transport-security'] || ''), JSON.stringify(h));
        await tp.goto(process.env.WEB_TLS_URL + '/');
        await signIn(tp, 'ops', PASS);
        await signedIn(tp, 'ops');
        const names = (await ctx.cookies()).map((c) => c.name);
        assert(names.includes('__Host-schedq_session') && !names.includes('schedq_session'), names.join(' '));
      });
    }
  } finally {
    await browser.close();
  }
  console.log('done');
  process.exit(0);
})().catch((e) => { console.log('not ok - the driver: ' + (e && e.stack ? e.stack.replace(/\n/g, ' ') : e)); console.log('done'); process.exit(1); });
