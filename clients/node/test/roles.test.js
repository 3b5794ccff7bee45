/*
 * clients/node/test/roles.test.js
 *	  The library as the roles of docs/security.md use it: `app` (the
 *	  submitter's grants) submits and manages, `worker` (the worker's
 *	  grants and a work grant of app) runs a pool.  Needs those roles
 *	  (SCHEDQ_TEST_ROLES=1: test/t/091_client_node.pl makes them).
 */
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const schedq = require('..');
const { unique, connect, one, until } = require('./helpers');

const skip = process.env.SCHEDQ_TEST_ROLES ? false : 'no roles app and worker (SCHEDQ_TEST_ROLES)';

test('as the documented roles: app submits and manages, worker runs the pool', { skip }, async () => {
	const app = await connect({ user: 'app' });
	const db = await connect();
	try {
		const queue = unique('roles');
		await app.query('BEGIN');
		const first = await schedq.submit(app, 'role_work', { n: 1 }, { queue });
		await app.query('COMMIT');
		const more = await schedq.submitMany(app, [
			{ kind: 'role_work', payload: { n: 2 }, queue },
			{ kind: 'role_fail', queue, maxAttempts: 1 },
		]);
		const canceled = await schedq.submit(app, 'role_work', { n: 3 }, { queue, runAt: new Date(Date.now() + 3600e3) });
		assert.equal(await schedq.cancel(app, canceled), true);
		const name = unique('role_sched');
		assert.equal(await schedq.schedule(app, name, '@daily', 'role_work', {}, { queue, enabled: false }), name);
		assert.equal(await schedq.setScheduleEnabled(app, name, false), true);
		assert.equal(await schedq.unschedule(app, name), true);
		const run = await schedq.createRun(app, { name });
		assert.equal(await schedq.cancelRun(app, run), true);

		const worker = new schedq.Worker({
			connection: { user: 'worker' },
			queues: [queue],
			handleSignals: false,
			handlers: {
				async role_work(job) {
					await job.progress(100, 'all');
					return { n: job.payload.n };
				},
				async role_fail() {
					throw new Error('as worker');
				},
			},
		});
		const outcomes = [];
		worker.on('outcome', (job, outcome) => outcomes.push(outcome));
		const running = worker.run();
		await until(() => outcomes.length === 3, 60, 'three outcomes');
		worker.stop();
		await running;
		assert.deepEqual(outcomes.sort(), ['done', 'done', 'failed']);
		const ids = [first, ...more];
		assert.deepEqual(
			(await db.query(
				"SELECT status, owner::text, claimed_by IS NOT NULL AS claimed, progress FROM schedq.task WHERE id = ANY($1::bigint[]) ORDER BY id",
				[ids]
			)).rows.map((r) => `${r.status} ${r.owner} ${r.claimed} ${r.progress}`),
			['done app true 100', 'done app true 100', 'failed app true null']
		);
		// The submitter may retry its failed task; the worker may not submit.
		assert.equal(await schedq.retry(app, more[1]), true);
		const asWorker = await connect({ user: 'worker' });
		try {
			await assert.rejects(schedq.submit(asWorker, 'x', {}, { queue }), schedq.PermissionDenied);
		} finally {
			await asWorker.end();
		}
		await schedq.cancel(app, more[1]);
		assert.equal(await one(db, 'SELECT status FROM schedq.task WHERE id = $1', [more[1]]), 'canceled');
	} finally {
		await app.end();
		await db.end();
	}
});
