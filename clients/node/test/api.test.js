/*
 * clients/node/test/api.test.js
 *	  Submitting and managing in the caller's transaction, and the errors.
 */
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const schedq = require('..');
const { unique, connect, one } = require('./helpers');

let db;
test.before(async () => {
	db = await connect();
});
test.after(() => db.end());

const count = (kind) =>
	one(db, 'SELECT count(*)::int FROM schedq.task WHERE kind = $1', [kind]);

test('submit in a rolled-back transaction creates nothing; in a committed one, exactly one', async () => {
	const kind = unique('tx');
	await db.query('BEGIN');
	const id = await schedq.submit(db, kind, { n: 1 });
	assert.equal(typeof id, 'number');
	assert.equal(await count(kind), 1, 'visible inside the transaction');
	await db.query('ROLLBACK');
	assert.equal(await count(kind), 0, 'rolled back: no task');

	await db.query('BEGIN');
	const id2 = await schedq.submit(db, kind, { n: 2 });
	await db.query('COMMIT');
	assert.equal(await count(kind), 1);
	assert.deepEqual(
		await one(db, 'SELECT payload FROM schedq.task WHERE id = $1', [id2]),
		{ n: 2 }
	);
});

test('submit passes every option of schedq.submit', async () => {
	const kind = unique('opts');
	await schedq.setBudget(db, `${kind}_b`, 100);
	const run = await schedq.createRun(db, { name: kind, failurePolicy: 'continue' });
	const first = await schedq.submit(db, kind, {}, { runId: run });
	const runAt = new Date(Date.now() + 3600e3);
	const id = await schedq.submit(db, kind, { x: [1] }, {
		queue: `${kind}_q`,
		priority: 7,
		runAt,
		maxAttempts: 3,
		timeout: 90,
		lockKey: `${kind}_lock`,
		version: 4,
		concurrencyKey: `${kind}_ck`,
		requiredCaps: ['gpu'],
		budgets: [`${kind}_b`],
		cost: 2.5,
		runId: run,
		dependsOn: [first],
		dedupKey: `${kind}_d`,
	});
	const { rows } = await db.query(
		`SELECT queue, priority, run_at, max_attempts, timeout, lock_key, version,
		        concurrency_key, required_caps, budgets, cost::float8 AS cost, run_id,
		        depends_on, dedup_key
		   FROM schedq.task WHERE id = $1`,
		[id]
	);
	const t = rows[0];
	assert.equal(t.queue, `${kind}_q`);
	assert.equal(t.priority, 7);
	assert.equal(t.run_at.getTime(), runAt.getTime());
	assert.equal(t.max_attempts, 3);
	assert.equal(t.timeout.minutes, 1);
	assert.equal(t.timeout.seconds, 30);
	assert.equal(t.lock_key, `${kind}_lock`);
	assert.equal(Number(t.version), 4);
	assert.equal(t.concurrency_key, `${kind}_ck`);
	assert.deepEqual(t.required_caps, ['gpu']);
	assert.deepEqual(t.budgets, [`${kind}_b`]);
	assert.equal(t.cost, 2.5);
	assert.equal(Number(t.run_id), run);
	assert.deepEqual(t.depends_on.map(Number), [first]);
	assert.equal(t.dedup_key, `${kind}_d`);
	// The dedup key: the live holder's id, nothing created.
	assert.equal(await schedq.submit(db, kind, {}, { dedupKey: `${kind}_d` }), id);
	await assert.rejects(schedq.submit(db, kind, {}, { colour: 'red' }), TypeError);
});

test('submitMany: ids in order, options applied, all or none', async () => {
	const kind = unique('many');
	const ids = await schedq.submitMany(db, [
		{ kind, payload: { i: 1 } },
		{ kind, payload: { i: 2 }, priority: 5, timeout: 60, queue: `${kind}_q` },
		{ kind, runAt: new Date(Date.now() + 60e3) },
	]);
	assert.equal(ids.length, 3);
	const { rows } = await db.query(
		`SELECT id, payload, priority, queue, status FROM schedq.task
		  WHERE id = ANY($1::bigint[]) ORDER BY id`,
		[ids]
	);
	assert.deepEqual(rows.map((r) => Number(r.id)), ids);
	assert.deepEqual(rows[1], {
		id: String(ids[1]),
		payload: { i: 2 },
		priority: 5,
		queue: `${kind}_q`,
		status: 'available',
	});
	assert.equal(rows[2].status, 'pending');
	await assert.rejects(
		schedq.submitMany(db, [{ kind }, { kind, maxAttempts: 0 }]),
		(err) => err instanceof schedq.InvalidArgument && err.sqlstate === '22023'
	);
	assert.equal(await count(kind), 3, 'the refused batch created nothing');
});

test('submitSql, schedule, setScheduleEnabled, unschedule', async () => {
	const name = unique('sched');
	const sqlTask = await schedq.submitSql(db, 'SELECT 1', { queue: `${name}_q`, priority: 3 });
	assert.equal(
		await one(db, 'SELECT kind || priority FROM schedq.task WHERE id = $1', [sqlTask]),
		'sql3'
	);
	assert.equal(
		await schedq.schedule(db, name, '*/5 * * * *', `${name}_k`, { a: 1 }, {
			timezone: 'Europe/Paris',
			queue: `${name}_q`,
			priority: 2,
			maxAttempts: 4,
			timeout: '10 minutes',
		}),
		name
	);
	const row = async () =>
		(
			await db.query(
				'SELECT schedule, kind, payload, timezone, enabled FROM schedq.periodic WHERE name = $1',
				[name]
			)
		).rows[0];
	assert.deepEqual(await row(), {
		schedule: '*/5 * * * *',
		kind: `${name}_k`,
		payload: { a: 1 },
		timezone: 'Europe/Paris',
		enabled: true,
	});
	assert.equal(await schedq.setScheduleEnabled(db, name, false), true);
	assert.equal((await row()).enabled, false);
	assert.equal(await schedq.setScheduleEnabled(db, `${name}_none`, true), false);
	assert.equal(await schedq.unschedule(db, name), true);
	assert.equal(await row(), undefined);
	assert.equal(await schedq.unschedule(db, name), false);
	await assert.rejects(
		schedq.schedule(db, `${name}_bad`, 'every now and then', 'k'),
		schedq.InvalidArgument
	);
});

test('workflows: createRun with dependencies, cancelRun', async () => {
	const kind = unique('run');
	await db.query('BEGIN');
	const run = await schedq.createRun(db, { name: kind });
	const a = await schedq.submit(db, kind, {}, { runId: run });
	const b = await schedq.submit(db, kind, {}, { runId: run, dependsOn: [a] });
	await db.query('COMMIT');
	assert.equal(await one(db, 'SELECT status FROM schedq.task WHERE id = $1', [b]), 'pending');
	assert.equal(await schedq.cancelRun(db, run), true);
	assert.equal(await one(db, 'SELECT status FROM schedq.run WHERE id = $1', [run]), 'canceled');
	assert.equal(await schedq.cancelRun(db, run), false);
	await assert.rejects(
		schedq.submit(db, kind, {}, { runId: run }),
		(err) => err instanceof schedq.ObjectNotInPrerequisiteState && err.sqlstate === '55000'
	);
	await assert.rejects(
		schedq.createRun(db, { failurePolicy: 'sometimes' }),
		schedq.InvalidArgument
	);
});

test('cancel, retry, pauseQueue, resumeQueue, setConcurrencyLimit', async () => {
	const kind = unique('manage');
	const id = await schedq.submit(db, kind);
	assert.equal(await schedq.cancel(db, id), true);
	assert.equal(await schedq.cancel(db, id), false);
	assert.equal(await one(db, 'SELECT status FROM schedq.task WHERE id = $1', [id]), 'canceled');
	assert.equal(await schedq.retry(db, id), true);
	assert.equal(await one(db, 'SELECT status FROM schedq.task WHERE id = $1', [id]), 'available');
	assert.equal(await schedq.retry(db, id), false);

	await schedq.pauseQueue(db, `${kind}_q`);
	assert.equal(await one(db, 'SELECT paused FROM schedq.queue WHERE name = $1', [`${kind}_q`]), true);
	await schedq.resumeQueue(db, `${kind}_q`);
	assert.equal(await one(db, 'SELECT paused FROM schedq.queue WHERE name = $1', [`${kind}_q`]), false);

	await schedq.setConcurrencyLimit(db, `${kind}_ck`, 2);
	assert.equal(
		await one(db, 'SELECT max_active FROM schedq.concurrency_limit WHERE key = $1', [`${kind}_ck`]),
		2
	);
	await schedq.setConcurrencyLimit(db, `${kind}_ck`, null);
	assert.equal(
		await one(db, 'SELECT count(*)::int FROM schedq.concurrency_limit WHERE key = $1', [`${kind}_ck`]),
		0
	);
});

test('errors: each SQLSTATE as its named class, with message, detail, hint and cause', async () => {
	const kind = unique('err');
	const cases = [
		[() => schedq.submit(db, '', {}), schedq.InvalidArgument, '22023'],
		[() => schedq.submit(db, kind, {}, { maxAttempts: 0 }), schedq.InvalidArgument, '22023'],
		[() => schedq.submit(db, kind, {}, { queue: null }), schedq.NullValueNotAllowed, '22004'],
		[() => schedq.submit(db, kind, {}, { budgets: ['no_such_budget'] }), schedq.NotFound, '42704'],
		[() => schedq.submit(db, kind, {}, { runId: 987654321 }), schedq.ReferenceNotFound, '23503'],
		[() => schedq.submit(db, kind, {}, { queue: 'q'.repeat(300) }), schedq.LimitExceeded, '54000'],
		[() => schedq.submit(db, kind, {}, { version: 1 }), schedq.InvalidArgument, '22023'],
	];
	for (const [call, Cls, sqlstate] of cases) {
		await assert.rejects(call, (err) => {
			assert.ok(err instanceof Cls, `${err.name} is ${Cls.name}`);
			assert.ok(err instanceof schedq.SchedqError);
			assert.equal(err.sqlstate, sqlstate);
			assert.equal(err.name, Cls.name);
			assert.equal(err.cause.code, sqlstate, 'the driver error is the cause');
			assert.equal(err.message, err.cause.message);
			return true;
		});
	}
	assert.equal(await count(kind), 0, 'the refused calls created nothing');

	// A role without schedq's privileges: PermissionDenied.
	const role = unique('nopriv');
	await db.query(`CREATE ROLE ${role}`);
	await db.query('BEGIN');
	await db.query(`SET LOCAL ROLE ${role}`);
	const denied = await schedq.submit(db, kind).catch((e) => e);
	await db.query('ROLLBACK');
	await db.query(`DROP ROLE ${role}`);
	assert.ok(denied instanceof schedq.PermissionDenied, String(denied));
	assert.equal(denied.sqlstate, '42501');

	// A malformed and a forged token.
	const bad = await schedq
		.Job.prototype.completeIn.call({ token: 'not-a-token' }, db)
		.catch((e) => e);
	assert.ok(bad instanceof schedq.MalformedToken, String(bad));
	const forged = await schedq
		.Job.prototype.completeIn.call({ token: '1.1.1.30000000.00.' + '0'.repeat(64) }, db)
		.catch((e) => e);
	assert.ok(forged instanceof schedq.ForgedToken, String(forged));
	assert.equal(forged.sqlstate, '28000');
});

test('checkVersion: 1.2 accepted, an older schedq refused with UnsupportedVersion', async () => {
	assert.equal(await schedq.checkVersion(db), '1.2');
	const dbname = unique('old');
	await db.query(`CREATE DATABASE ${dbname}`);
	const old = await connect({ database: dbname });
	try {
		await assert.rejects(schedq.checkVersion(old), /not installed/);
		await old.query("CREATE EXTENSION schedq VERSION '1.1'");
		await assert.rejects(schedq.checkVersion(old), (err) => {
			assert.ok(err instanceof schedq.UnsupportedVersion);
			assert.match(err.message, /schedq 1\.1 is installed; this library needs schedq 1\.2/);
			return true;
		});
	} finally {
		await old.end();
		// FORCE: schedq's scheduler of that database may still be connected.
		await db.query(`DROP DATABASE ${dbname} WITH (FORCE)`);
	}
});
