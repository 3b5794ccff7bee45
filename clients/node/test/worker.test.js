/*
 * clients/node/test/worker.test.js
 *	  The worker pool against the test server: once each under
 *	  concurrency, batched completions, lost connections, retries and
 *	  back-off, progress, heartbeats, stale attempts, a handler that
 *	  completes in its own transaction.
 */
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { Pool } = require('pg');
const schedq = require('..');
const { unique, connect, one, until } = require('./helpers');

let db;
test.before(async () => {
	db = await connect();
});
test.after(() => db.end());

/* A worker on its own queue, its outcomes collected; run() started. */
function start(options) {
	const queue = options.queue || unique('q');
	const app = unique('w');
	const worker = new schedq.Worker({
		queues: [queue],
		handleSignals: false,
		connection: { application_name: app },
		...options,
	});
	const outcomes = [];
	worker.on('outcome', (job, outcome, ms, error) =>
		outcomes.push({ id: job.id, attempt: job.attempt, outcome, error })
	);
	const reconnects = [];
	worker.on('reconnecting', (err) => reconnects.push(err));
	const running = worker.run();
	running.catch(() => {});
	return { worker, queue, app, outcomes, reconnects, running };
}

const statuses = (ids) =>
	db
		.query(
			`SELECT status, attempts, count(*)::int AS n FROM schedq.task
			  WHERE id = ANY($1::bigint[]) GROUP BY 1, 2 ORDER BY 1, 2`,
			[ids]
		)
		.then((r) => r.rows);

const submitN = (queue, kind, n, payload = (i) => ({ i }), options = {}) =>
	schedq.submitMany(
		db,
		Array.from({ length: n }, (_, i) => ({ kind, payload: payload(i), queue, ...options }))
	);

const calls = async (fn) =>
	Number(
		await one(
			db,
			"SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions WHERE schemaname = 'schedq' AND funcname = $1",
			[fn]
		)
	);

test('handlers run once each under concurrency; completions batched by complete_and_claim', async () => {
	await db.query('SELECT pg_stat_clear_snapshot()');
	const cacBefore = await calls('complete_and_claim');
	const completeBefore = await calls('complete');
	// Handlers finish in waves: each waits until every slot is busy (or
	// all that is left has started), then the whole wave returns in the
	// same turn of the event loop.  Each wave's successes must reach the
	// server in one complete_and_claim, not one statement each.
	const N = 400;
	const queue = unique('q');
	const ids = await submitN(queue, 'work', N);
	const runs = new Map();
	let active = 0;
	let most = 0;
	let returned = 0;
	let waiting = [];
	const w = start({
		queue,
		concurrency: 8,
		handlers: {
			async work(job) {
				runs.set(job.id, (runs.get(job.id) || 0) + 1);
				most = Math.max(most, ++active);
				await new Promise((resolve) => {
					waiting.push(resolve);
					if (waiting.length === Math.min(8, N - returned)) {
						const wave = waiting;
						waiting = [];
						wave.forEach((r) => r());
					}
				});
				active--;
				returned++;
				return { twice: job.payload.i * 2 };
			},
		},
	});
	await until(async () => w.outcomes.length === N, 120, `${N} outcomes`);
	w.worker.stop();
	await w.running;
	assert.deepEqual(await statuses(ids), [{ status: 'done', attempts: 1, n: N }]);
	assert.equal(runs.size, N);
	assert.ok([...runs.values()].every((n) => n === 1), 'each handler ran once');
	assert.ok(w.outcomes.every((o) => o.outcome === 'done'));
	assert.equal(new Set(w.outcomes.map((o) => o.id)).size, N, 'one done per task');
	assert.equal(most, 8, 'eight at once, never more');
	assert.equal(
		await one(db, "SELECT count(*)::int FROM schedq.task WHERE id = ANY($1::bigint[]) AND (result->>'twice')::int = (payload->>'i')::int * 2", [ids]),
		N,
		'each result stored'
	);
	// The worker's sessions are closed: their function counts are in.
	await until(async () => {
		await db.query('SELECT pg_stat_clear_snapshot()');
		return (await calls('complete_and_claim')) > cacBefore;
	}, 30, 'the function counts');
	// One statement a wave, the first claim, and those that find the
	// queue empty at the end: N / 8 + 1, and a few.
	const cac = (await calls('complete_and_claim')) - cacBefore;
	assert.ok(cac <= N / 8 + 3, `complete_and_claim ${cac} times for ${N} tasks in waves of 8`);
	assert.equal((await calls('complete')) - completeBefore, 0, 'never complete()');
});

test('lost connections: the pool reconnects, nothing lost, nothing done twice', async () => {
	const runs = new Map();
	const w = start({
		concurrency: 4,
		handlers: {
			async work(job) {
				runs.set(job.id, (runs.get(job.id) || 0) + 1);
				await new Promise((r) => setTimeout(r, 10));
				return null;
			},
		},
	});
	const ids = await submitN(w.queue, 'work', 300);
	for (let cut = 0; cut < 4; cut++) {
		await until(
			async () => w.outcomes.length >= (cut + 1) * 50 || w.outcomes.length === 300,
			60,
			'progress'
		);
		await db.query(
			'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
			[w.app]
		);
		await until(() => w.reconnects.length > cut, 30, 'the reconnection');
	}
	await until(async () => w.outcomes.length === 300, 120, '300 outcomes');
	w.worker.stop();
	await w.running;
	assert.deepEqual(await statuses(ids), [{ status: 'done', attempts: 1, n: 300 }]);
	assert.ok([...runs.values()].every((n) => n === 1), 'each handler ran once');
	assert.equal(runs.size, 300);
	assert.deepEqual(
		[...new Set(w.outcomes.map((o) => o.outcome))],
		['done'],
		'one done per task'
	);
	assert.equal(new Set(w.outcomes.map((o) => o.id)).size, 300);
	assert.ok(w.reconnects.length >= 4);
});

test('failures: the message recorded, retries with back-off, max_attempts, RetryAfter, PermanentFailure', async () => {
	const w = start({
		concurrency: 4,
		handlers: {
			async always(job) {
				throw new Error(`broken on attempt ${job.attempt}`);
			},
			async twice(job) {
				if (job.attempt <= 2) throw new schedq.RetryAfter(`not yet (${job.attempt})`, 0.2);
				return { attempt: job.attempt };
			},
			async never() {
				throw new schedq.PermanentFailure('bad input: never');
			},
		},
	});
	const [always] = await submitN(w.queue, 'always', 1, () => ({}), { maxAttempts: 2 });
	const [twice] = await submitN(w.queue, 'twice', 1);
	const [never] = await submitN(w.queue, 'never', 1);
	const task = async (id) =>
		(
			await db.query(
				'SELECT status, attempts, last_error, run_at, finished_at FROM schedq.task WHERE id = $1',
				[id]
			)
		).rows[0];
	// The first failure of `always`: retried after schedq's back-off (1 s).
	const first = await until(async () => {
		const t = await task(always);
		return t.attempts === 1 && t.status === 'pending' && t;
	}, 30, 'the first failure');
	assert.equal(first.last_error, 'Error: broken on attempt 1');
	await until(async () => (await task(always)).status === 'failed', 30, 'the final failure');
	const t = await task(always);
	assert.equal(t.attempts, 2);
	assert.equal(t.last_error, 'Error: broken on attempt 2');
	assert.ok(t.finished_at - first.run_at >= 0, 'the second attempt ran after the back-off');
	await until(async () => (await task(twice)).status === 'done', 30, 'twice done');
	assert.equal((await task(twice)).attempts, 3);
	await until(async () => (await task(never)).status === 'failed', 30, 'never failed');
	assert.deepEqual(
		[(await task(never)).attempts, (await task(never)).last_error],
		[1, 'bad input: never']
	);
	w.worker.stop();
	await w.running;
	const o = (id) => w.outcomes.filter((x) => x.id === id).map((x) => x.outcome);
	assert.deepEqual(o(always), ['retry', 'failed']);
	assert.deepEqual(o(twice), ['retry', 'retry', 'done']);
	assert.deepEqual(o(never), ['failed']);
});

test('progress is visible in schedq.task while the handler runs', async () => {
	let release;
	const released = new Promise((r) => (release = r));
	const w = start({
		handlers: {
			async slow(job) {
				assert.ok((await job.progress(42.5, 'halfway')) instanceof Date);
				await released;
				return 'ok';
			},
		},
	});
	const [id] = await submitN(w.queue, 'slow', 1);
	const seen = await until(async () => {
		const { rows } = await db.query(
			'SELECT status, progress, progress_note FROM schedq.task WHERE id = $1',
			[id]
		);
		return rows[0].progress !== null && rows[0];
	}, 30, 'the progress');
	assert.deepEqual(seen, { status: 'running', progress: 42.5, progress_note: 'halfway' });
	release();
	await until(async () => w.outcomes.length === 1, 30, 'done');
	w.worker.stop();
	await w.running;
	assert.equal(await one(db, 'SELECT status FROM schedq.task WHERE id = $1', [id]), 'done');
});

test('heartbeats keep a task longer than its lease; a canceled task is stale and its signal aborted', async () => {
	let aborted = null;
	const w = start({
		lease: 3,
		handlers: {
			async long() {
				await new Promise((r) => setTimeout(r, 7000));
				return 'long';
			},
			async waits(job) {
				await new Promise((resolve) => job.signal.addEventListener('abort', resolve));
				aborted = job.signal.reason.message;
				return 'late';
			},
		},
	});
	const [long] = await submitN(w.queue, 'long', 1);
	const [waits] = await submitN(w.queue, 'waits', 1);
	await until(
		async () => (await one(db, 'SELECT status FROM schedq.task WHERE id = $1', [waits])) === 'running',
		30,
		'waits running'
	);
	assert.equal(await schedq.cancel(db, waits), true);
	await until(() => aborted, 30, 'the abort');
	await until(async () => w.outcomes.length === 2, 30, 'both outcomes');
	w.worker.stop();
	await w.running;
	assert.equal(
		await one(db, "SELECT status || ' ' || attempts FROM schedq.task WHERE id = $1", [long]),
		'done 1',
		'the 7 s task under a 3 s lease was done on its first attempt'
	);
	assert.equal(await one(db, 'SELECT status FROM schedq.task WHERE id = $1', [waits]), 'canceled');
	assert.deepEqual(
		w.outcomes.map((o) => [o.id, o.outcome]).sort(),
		[[long, 'done'], [waits, 'stale']].sort()
	);
});

test('a handler that completes in its own transaction: its write and the completion, both or neither', async () => {
	await db.query('CREATE TABLE IF NOT EXISTS node_effects (task bigint, attempt int)');
	const pool = new Pool({ max: 4 });
	const w = start({
		handlers: {
			async ledger(job) {
				const client = await pool.connect();
				try {
					await client.query('BEGIN');
					await client.query('INSERT INTO node_effects VALUES ($1, $2)', [job.id, job.attempt]);
					if (job.payload.raise && job.attempt === 1) throw new Error('after the write');
					const ok = await job.completeIn(client, { wrote: true });
					await client.query('COMMIT');
					return ok;
				} catch (err) {
					await client.query('ROLLBACK');
					throw err;
				} finally {
					client.release();
				}
			},
		},
	});
	try {
		const [plain] = await submitN(w.queue, 'ledger', 1, () => ({}));
		const [raises] = await submitN(w.queue, 'ledger', 1, () => ({ raise: true }));
		await until(async () => w.outcomes.length === 3, 30, 'three outcomes');
		w.worker.stop();
		await w.running;
		const effects = async (id) =>
			(await db.query('SELECT attempt FROM node_effects WHERE task = $1 ORDER BY 1', [id])).rows.map(
				(r) => r.attempt
			);
		assert.deepEqual(await effects(plain), [1], 'one write, with the completion');
		assert.deepEqual(await effects(raises), [2], 'the raising attempt wrote nothing');
		const row = async (id) =>
			(await db.query('SELECT status, attempts, result, last_error FROM schedq.task WHERE id = $1', [id]))
				.rows[0];
		assert.deepEqual(await row(plain), { status: 'done', attempts: 1, result: { wrote: true }, last_error: null });
		assert.deepEqual(await row(raises), {
			status: 'done',
			attempts: 2,
			result: { wrote: true },
			last_error: 'Error: after the write',
		});
		assert.deepEqual(
			w.outcomes.map((o) => `${o.id}.${o.attempt} ${o.outcome}`).sort(),
			[`${plain}.1 done`, `${raises}.1 retry`, `${raises}.2 done`].sort(),
			'the pool did not complete them again'
		);
	} finally {
		await pool.end();
	}
});

test('the first connection fails: CouldNotConnect; a role without privileges: PermissionDenied', async () => {
	const w = new schedq.Worker({
		connection: { host: '/nonexistent', port: 1 },
		handleSignals: false,
	});
	await assert.rejects(w.run(), (err) => err instanceof schedq.CouldNotConnect && /could not connect/.test(err.message));
	const role = unique('bare');
	await db.query(`CREATE ROLE ${role} LOGIN`);
	try {
		const bare = new schedq.Worker({ connection: { user: role }, handleSignals: false });
		await assert.rejects(bare.run(), (err) => {
			assert.ok(err instanceof schedq.PermissionDenied, String(err));
			assert.match(err.message, /permission denied for schema schedq/);
			return true;
		});
	} finally {
		await db.query(`DROP ROLE ${role}`);
	}
});

test('prefetch: claims of a whole batch, none of a few tasks while some wait in hand', async () => {
	const w = start({
		concurrency: 2,
		prefetch: 30,
		handlers: {
			async work() {
				await new Promise((r) => setTimeout(r, 1));
				return null;
			},
		},
	});
	const ids = await submitN(w.queue, 'work', 100);
	await until(() => w.outcomes.length === 100, 60, '100 outcomes');
	w.worker.stop();
	await w.running;
	// The tasks of one claim share its start time.
	const sizes = (
		await db.query(
			'SELECT count(*)::int AS n FROM schedq.task WHERE id = ANY($1::bigint[]) GROUP BY started_at ORDER BY min(id)',
			[ids]
		)
	).rows.map((r) => r.n);
	assert.deepEqual(sizes, [30, 30, 30, 10], `claims of 30 (the prefetch), the last of what was left: ${sizes}`);
});

test('prefetch: a success is completed within 100 ms while the claimed tasks behind it wait', async () => {
	let release;
	const gate = new Promise((r) => (release = r));
	const w = start({
		concurrency: 1,
		prefetch: 5,
		handlers: {
			async work(job) {
				if (job.payload.i > 0) await gate;
				return null;
			},
		},
	});
	const ids = await submitN(w.queue, 'work', 6);
	try {
		// Task 0 ran; task 1 holds the one handler, four wait in hand:
		// no claim fits, so task 0's completion goes on its own.
		await until(
			async () => (await one(db, 'SELECT status::text FROM schedq.task WHERE id = $1', [ids[0]])) === 'done',
			10,
			'the first task done while the others wait'
		);
	} finally {
		release();
	}
	await until(() => w.outcomes.length === 6, 30, '6 outcomes');
	w.worker.stop();
	await w.running;
});

test('prefetch: tasks claimed ahead of a free handler, run once each, drained by stop()', async () => {
	let most = 0;
	let stopAt = null;
	const w = start({
		concurrency: 2,
		prefetch: 30,
		handlers: {
			async work(job) {
				await new Promise((r) => setTimeout(r, 5));
				return job.payload.i;
			},
		},
	});
	const ids = await submitN(w.queue, 'work', 200);
	const running = () =>
		one(db, "SELECT count(*)::int FROM schedq.task WHERE id = ANY($1::bigint[]) AND status = 'running'", [ids]);
	await until(async () => {
		most = Math.max(most, await running());
		return most > 2 || w.outcomes.length === 200;
	}, 60, 'more running than handlers');
	assert.ok(most > 2, `claimed ahead: ${most} running with 2 handlers`);
	assert.ok(most <= 32, `no more than concurrency + prefetch: ${most}`);
	await until(() => w.outcomes.length >= 50, 60, '50 outcomes');
	w.worker.stop();
	stopAt = w.outcomes.length;
	await w.running;
	assert.equal(await running(), 0, 'the drain ran every task claimed');
	assert.ok(w.outcomes.length > stopAt, 'the claimed ones finished after stop()');
	const done = await one(db, "SELECT count(*)::int FROM schedq.task WHERE id = ANY($1::bigint[]) AND status = 'done' AND attempts = 1", [ids]);
	assert.equal(done, w.outcomes.length);
	assert.ok(w.outcomes.every((o) => o.outcome === 'done'));
	assert.equal(new Set(w.outcomes.map((o) => o.id)).size, w.outcomes.length, 'one outcome per task');
	const rest = await one(db, "SELECT count(*)::int FROM schedq.task WHERE id = ANY($1::bigint[]) AND status = 'available'", [ids]);
	assert.equal(done + rest, 200, 'the others were never claimed');
});

test('a result over max_payload, one that is not JSON, a huge error with NUL: failed, the worker goes on', async () => {
	const max = await one(db, "SELECT setting FROM pg_settings WHERE name = 'schedq.max_payload'");
	const w = start({
		concurrency: 4,
		handlers: {
			async big() {
				return { blob: 'x'.repeat(Number(max) + 10) }; // max_payload is in bytes
			},
			async bigint() {
				return { n: 10n };
			},
			async shout() {
				throw new Error(`a\0b${'!'.repeat(100000)}`);
			},
			async fine(job) {
				return { ok: job.payload.i };
			},
		},
	});
	const ids = await schedq.submitMany(db, [
		...['big', 'bigint', 'shout'].map((kind) => ({ kind, queue: w.queue, maxAttempts: 1 })),
		...Array.from({ length: 20 }, (_, i) => ({ kind: 'fine', payload: { i }, queue: w.queue })),
	]);
	await until(async () => w.outcomes.length === 23, 60, '23 outcomes');
	w.worker.stop();
	await w.running;
	const rows = (
		await db.query(
			'SELECT kind, status, attempts, left(last_error, 40) AS e, length(last_error) AS len FROM schedq.task WHERE id = ANY($1::bigint[]) ORDER BY id',
			[ids]
		)
	).rows;
	assert.equal(rows[0].status, 'failed');
	assert.match(rows[0].e, /^the result is too large/);
	assert.equal(rows[1].status, 'failed');
	assert.match(rows[1].e, /^the result is not JSON/);
	assert.equal(rows[2].status, 'failed');
	assert.equal(rows[2].e.slice(0, 10), 'Error: ab!');
	assert.ok(rows[2].len <= 16384);
	assert.deepEqual(
		[...new Set(rows.slice(3).map((r) => `${r.status} ${r.attempts}`))],
		['done 1'],
		'the others are done'
	);
});

test('a handler returning nothing (undefined or null) leaves the result NULL', async () => {
	const w = start({
		handlers: {
			async nothing() {},
			async nullish() {
				return null;
			},
			async list() {
				return [null];
			},
		},
	});
	const ids = [
		...(await submitN(w.queue, 'nothing', 1)),
		...(await submitN(w.queue, 'nullish', 1)),
		...(await submitN(w.queue, 'list', 1)),
	];
	await until(async () => w.outcomes.length === 3, 30, 'three done');
	w.worker.stop();
	await w.running;
	const { rows } = await db.query(
		'SELECT kind, result IS NULL AS no_result, result FROM schedq.task WHERE id = ANY($1) ORDER BY kind',
		[ids]
	);
	assert.deepEqual(rows, [
		{ kind: 'list', no_result: false, result: [null] },
		{ kind: 'nothing', no_result: true, result: null },
		{ kind: 'nullish', no_result: true, result: null },
	]);
});
