/*
 * clients/node/test/helpers.js
 *	  What the tests share: connections to the test server (libpq's PG*
 *	  variables, set by test/t/091_client_node.pl), unique names, and
 *	  waiting on a condition with a deadline.
 */
'use strict';

const { Client } = require('pg');

let seq = 0;
/* A name no other test uses (queues, kinds, schedules). */
const unique = (prefix) => `${prefix}_${process.pid}_${Date.now() % 1e6}_${++seq}`;

/* A connected client; the tests end it. */
async function connect(config = {}) {
	const client = new Client(config);
	await client.connect();
	return client;
}

/* One value of one row. */
async function one(db, sql, values) {
	const { rows } = await db.query(sql, values);
	return rows.length ? Object.values(rows[0])[0] : undefined;
}

/* Wait until check() is truthy (it may be async), at most `seconds`. */
async function until(check, seconds = 60, what = 'the condition') {
	const deadline = Date.now() + seconds * 1000;
	for (;;) {
		const v = await check();
		if (v) return v;
		if (Date.now() > deadline) throw new Error(`timed out after ${seconds} s waiting for ${what}`);
		await new Promise((r) => setTimeout(r, 50));
	}
}

module.exports = { unique, connect, one, until };
