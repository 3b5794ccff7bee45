#!/usr/bin/env node
/*
 * A schedq worker in Node.js, on the schedq library (clients/node):
 *
 *     npm ci && PGHOST=... PGUSER=worker SCHEDQ_QUEUES=default node worker.js
 *
 * Replace `handlers` with your own.  The library claims and completes in
 * batches, waits in await_task, heartbeats, reconnects, and drains on
 * SIGTERM (a second signal stops at once): clients/node/README.md.
 * Settings: the connection from libpq's PG* variables, the password file
 * or SCHEDQ_DSN; SCHEDQ_QUEUES, SCHEDQ_CAPS (comma lists), SCHEDQ_BATCH
 * (handlers, 10), SCHEDQ_LEASE (30 s), SCHEDQ_WAIT (30 s), SCHEDQ_WORKER.
 * Exit 3: cannot connect; 4: a missing privilege.
 */
'use strict';
const { Worker, PermanentFailure, RetryAfter, CouldNotConnect, PermissionDenied } = require('schedq');

const handlers = {
	async add({ payload }) {
		const numbers = payload && payload.numbers;
		if (!Array.isArray(numbers) || !numbers.every((x) => typeof x === 'number'))
			throw new PermanentFailure('bad input: add needs {"numbers": [n, ...]}');
		return { sum: numbers.reduce((a, b) => a + b, 0) };
	},
	async flaky({ attempt }) {
		if (attempt === 1) throw new RetryAfter('flaky: the first attempt always fails');
		return { attempt };
	},
	async sleep({ payload, signal }) {
		const seconds = payload && payload.seconds;
		if (typeof seconds !== 'number' || !(seconds >= 0 && seconds <= 3600))
			throw new PermanentFailure('bad input: sleep needs {"seconds": 0..3600}');
		await require('timers/promises').setTimeout(seconds * 1000, null, { signal });
		return { slept: seconds };
	},
};

const env = (name) => (process.env[name] || '').split(',').filter(Boolean);
const n = (name, dflt) => Number(process.env[name] || dflt);
const worker = new Worker({
	handlers, queues: env('SCHEDQ_QUEUES'), caps: env('SCHEDQ_CAPS'), concurrency: n('SCHEDQ_BATCH', 10),
	lease: n('SCHEDQ_LEASE', 30), wait: n('SCHEDQ_WAIT', 30), name: process.env.SCHEDQ_WORKER, log: console.log,
});
worker.run().then(() => process.exit(0), (err) => {
	const denied = err instanceof PermissionDenied || err.sqlstate === '3F000';
	console.error(`schedq-worker: ${denied ? `missing privilege: ${err.message} (see docs/security.md#roles)` : err.message}`);
	process.exit(err instanceof CouldNotConnect ? 3 : denied ? 4 : 1);
});
