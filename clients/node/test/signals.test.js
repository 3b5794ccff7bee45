/*
 * clients/node/test/signals.test.js
 *	  SIGTERM to a process running a worker pool (fixtures/child-worker.js):
 *	  it finishes the tasks in hand, claims nothing more and exits 0; a
 *	  second signal stops it at once, its tasks left to the reaper.
 */
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('child_process');
const path = require('path');
const schedq = require('..');
const { unique, connect, one, until } = require('./helpers');

let db;
test.before(async () => {
	db = await connect();
});
test.after(() => db.end());

function child(queue, concurrency = 2) {
	const proc = spawn(process.execPath, [path.join(__dirname, 'fixtures', 'child-worker.js')], {
		env: { ...process.env, PGAPPNAME: queue, SCHEDQ_TEST_QUEUE: queue, SCHEDQ_TEST_CONCURRENCY: String(concurrency) },
		stdio: ['ignore', 'pipe', 'pipe'],
	});
	const out = { text: '', err: '' };
	proc.stdout.on('data', (d) => (out.text += d));
	proc.stderr.on('data', (d) => (out.err += d));
	const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
	return { proc, out, exited };
}

const lines = (text, re) => text.split('\n').filter((l) => re.test(l));

test('SIGTERM drains: the tasks in hand finish, nothing more is claimed, exit 0; nothing lost or doubled', async () => {
	const queue = unique('sig');
	const ids = await schedq.submitMany(
		db,
		Array.from({ length: 6 }, () => ({ kind: 'nap', payload: { ms: 1500 }, queue }))
	);
	const c = child(queue, 2);
	await until(() => lines(c.out.text, /^ran /).length === 2, 60, 'two tasks running');
	const t0 = Date.now();
	c.proc.kill('SIGTERM');
	const { code } = await c.exited;
	assert.equal(code, 0, c.out.err);
	assert.ok(Date.now() - t0 < 20000, 'drained in seconds');
	const ran = lines(c.out.text, /^ran /).map((l) => Number(l.split(' ')[1]));
	assert.equal(ran.length, 2, 'it claimed nothing after the signal');
	assert.equal(lines(c.out.text, /^end /).length, 2, 'the two in hand finished');
	const st = async (id) => one(db, "SELECT status || ' ' || attempts FROM schedq.task WHERE id = $1", [id]);
	for (const id of ran) assert.equal(await st(id), 'done 1');
	assert.equal(
		await one(db, "SELECT count(*)::int FROM schedq.task WHERE id = ANY($1::bigint[]) AND status = 'available'", [ids]),
		4,
		'the others were not claimed'
	);

	// A second worker does the rest: every task ran exactly once.
	const d = child(queue, 4);
	await until(
		async () =>
			(await one(db, "SELECT count(*)::int FROM schedq.task WHERE id = ANY($1::bigint[]) AND status = 'done'", [ids])) === 6,
		60,
		'all six done'
	);
	d.proc.kill('SIGTERM');
	assert.equal((await d.exited).code, 0, d.out.err);
	const all = [...lines(c.out.text, /^ran /), ...lines(d.out.text, /^ran /)].map((l) => Number(l.split(' ')[1]));
	assert.deepEqual(all.sort(), [...ids].sort(), 'each task ran once');
	assert.deepEqual(
		(await db.query('SELECT DISTINCT status, attempts FROM schedq.task WHERE id = ANY($1::bigint[])', [ids])).rows,
		[{ status: 'done', attempts: 1 }]
	);
});

test('SIGTERM while waiting: exit 0 at once, no session left; a second signal stops at once', async () => {
	const queue = unique('sig2');
	const c = child(queue, 2);
	await until(() => /connected/.test(c.out.text), 30, 'connected');
	await until(
		async () =>
			(await one(db, "SELECT count(*)::int FROM pg_stat_activity WHERE query LIKE 'CALL schedq.await_task%' AND state = 'active' AND application_name = $1", [queue])) > 0,
		30,
		'waiting in await_task'
	);
	const t0 = Date.now();
	c.proc.kill('SIGTERM');
	assert.equal((await c.exited).code, 0, c.out.err);
	assert.ok(Date.now() - t0 < 10000, 'within 10 s, not the 30 s of the wait');
	await until(
		async () => (await one(db, 'SELECT count(*)::int FROM pg_stat_activity WHERE application_name = $1', [queue])) === 0,
		30,
		'no session of the worker left'
	);

	// Twice: the 20 s task is left running, to the reaper.
	const [id] = await schedq.submitMany(db, [{ kind: 'nap', payload: { ms: 20000 }, queue }]);
	const d = child(queue, 2);
	await until(() => /^ran /m.test(d.out.text), 30, 'the long task running');
	const t1 = Date.now();
	d.proc.kill('SIGTERM');
	await until(() => /^ran /m.test(d.out.text), 1);
	await new Promise((r) => setTimeout(r, 200));
	d.proc.kill('SIGTERM');
	assert.equal((await d.exited).code, 0, d.out.err);
	assert.ok(Date.now() - t1 < 10000, 'stopped at once, not after the 20 s task');
	assert.doesNotMatch(d.out.text, /^end /m);
	assert.equal(await one(db, 'SELECT status FROM schedq.task WHERE id = $1', [id]), 'running');
	await schedq.cancel(db, id);
});
