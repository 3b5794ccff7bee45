#!/usr/bin/env node
/*
 * A schedq worker in Node.js, with node-postgres (pg).
 *
 *     npm ci && PGHOST=... PGUSER=worker SCHEDQ_QUEUES=default node worker.js
 *
 * Copy it into your application and replace `handlers` with your own code.
 *
 * The protocol, in the order this loop follows it:
 *
 * 1. schedq.complete_and_claim(tokens, worker, ..., n, lease) hands out up
 *    to n tasks (with no tokens it is schedq.claim without a wait),
 *    each with a token: the signed grant of this attempt of this task.
 *    Every later call about the task carries the token, from any session.
 *    Grants are fenced: the token of an attempt that is no longer running
 *    (its lease expired and the reaper took the task back, it was canceled,
 *    it already finished) is stale, and a call with it changes nothing and
 *    says so (heartbeat returns NULL, fail 'stale', complete_many false).  A slow
 *    or cut-off worker can never overwrite a newer attempt, and repeating a
 *    report that may or may not have reached the server is safe.
 * 2. Nothing to claim: CALL schedq.await_task(...) sleeps until a task this
 *    worker could claim is available, or `wait` passes, holding no snapshot
 *    and no lock (so VACUUM is not held back by idle workers); then claim
 *    again, since another worker may have been quicker.  It must run
 *    outside a transaction block, as a statement of its own: pg's queries
 *    outside BEGIN are.
 * 3. While a task runs, schedq.heartbeat(token) extends its lease.  Beating
 *    every third of the lease keeps it alive through a missed beat.
 * 4. schedq.fail(token, error, retry_in, permanent) at once for a failure:
 *    it retries the task with backoff while attempts remain (after retry_in
 *    if given); permanent => true for input that can never succeed.
 * 5. The batch done, schedq.complete_and_claim(tokens, worker, results,
 *    queues, caps, n, lease) completes its successes and claims the next
 *    batch in one statement and one commit (the first call passes no
 *    tokens; it is then a plain claim).  It says nothing of a stale token
 *    (it changes nothing), so a task canceled after its last heartbeat is
 *    logged done.  When it claims nothing, wait (step 2).  While stopping,
 *    schedq.complete_many(tokens, results) completes them and claims nothing.
 *
 * Delivery is at least once: if a worker dies mid-task, or stays cut off
 * from the server longer than the lease, the reaper takes its task back
 * when the lease expires and the task runs again.  Handlers must be
 * idempotent.
 *
 * Settings, from the environment: the connection through PGHOST, PGPORT,
 * PGUSER, PGDATABASE, PGPASSWORD (or ~/.pgpass, or the file PGPASSFILE
 * names, read with the pgpass package as libpq reads it), or a URI in
 * SCHEDQ_DSN;
 * SCHEDQ_QUEUES and SCHEDQ_CAPS, comma lists (default: every queue, no
 * capability); SCHEDQ_BATCH, tasks per claim (10); SCHEDQ_LEASE, seconds
 * (30); SCHEDQ_WAIT, longest await_task, seconds (30); SCHEDQ_WORKER, the
 * name recorded in claimed_by (host:pid).
 *
 * SIGTERM or SIGINT: finish the tasks claimed, claim no more, exit 0.  A
 * second signal exits at once (the reaper takes the tasks back after their
 * lease).  Logs one line per attempt on stdout.
 *
 * Failures, as schedqctl's: the first connection fails (a wrong password,
 * say): one line on stderr, exit 3.  A privilege is missing: one line, exit
 * 4.  A connection lost later: reconnect after 0.1 s, doubling up to 2 s,
 * each delay jittered by +-25 %, so that a restart or a failover costs
 * about a second once the server takes connections again.
 *
 * Several servers: node-postgres connects to one host, so this worker
 * takes libpq's lists itself: the hosts of SCHEDQ_DSN's URI
 * (postgres://worker@db1:5432,db2:5432/app?target_session_attrs=read-write),
 * or PGHOST and PGPORT as comma lists (one port for all, or one each),
 * with PGTARGETSESSIONATTRS.  Each (re)connection tries them in turn; with
 * target_session_attrs=read-write it skips a server whose SHOW
 * transaction_read_only says on (a standby), as libpq does.  The worker
 * logs the host and port it reached.
 *
 * Connection poolers (PgBouncer in transaction mode): each statement here
 * is a transaction of its own, node-postgres prepares no named statement,
 * and a wait is canceled with a cancel request, which a pooler passes on
 * to the server connection that runs it.
 */
'use strict';

const net = require('net');
const os = require('os');
const { Client } = require('pg');
const pgpass = require('pgpass');

/* A temporary failure: try again after retryIn seconds, or after schedq's
 * backoff (1 s, doubling, capped at an hour) when null. */
class Retry extends Error {
	constructor(message, retryIn = null) {
		super(message);
		this.retryIn = retryIn;
	}
}

/* Input that can never succeed: fail the task without retrying. */
class BadInput extends Error {}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/* Handlers: kind -> async function(payload, attempt) returning a JSON result. */
const handlers = {
	async add(payload) {
		const numbers = payload && payload.numbers;
		if (!Array.isArray(numbers) || !numbers.every((x) => typeof x === 'number'))
			throw new BadInput('add needs {"numbers": [n, ...]}');
		return { sum: numbers.reduce((a, b) => a + b, 0) };
	},
	async flaky(payload, attempt) {
		if (attempt === 1) throw new Retry('flaky: the first attempt always fails');
		return { attempt };
	},
	async sleep(payload) {
		const seconds = payload && payload.seconds;
		if (typeof seconds !== 'number' || !(seconds >= 0 && seconds <= 3600))
			throw new BadInput('sleep needs {"seconds": 0..3600}');
		await sleep(seconds * 1000);
		return { slept: seconds };
	},
};

const list = (name) =>
	(process.env[name] || '').split(',').map((s) => s.trim()).filter(Boolean);
/* The password: PGPASSWORD, else the password file's line for the
 * connection (~/.pgpass, or PGPASSFILE), as libpq finds it. */
function password(params) {
	if (process.env.PGPASSWORD !== undefined) return Promise.resolve(process.env.PGPASSWORD);
	return new Promise((resolve) => pgpass(params, resolve));
}

/* The servers to try, in order, each a connection for pg, and the
 * target_session_attrs: any, or read-write.  A URI's host list, or
 * PGHOST's; one server alone is left to pg (it reads PGHOST, PGUSER, ...
 * itself; a password in SCHEDQ_DSN wins over the function). */
function servers() {
	const dsn = process.env.SCHEDQ_DSN;
	let target = process.env.PGTARGETSESSIONATTRS || 'any';
	let list;
	const uri = dsn && /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*)(.*)$/.exec(dsn);
	if (uri) {
		// target_session_attrs is this worker's to apply, not pg's.
		const rest = uri[4]
			.replace(/([?&])target_session_attrs=([^&#]*)&?/, (all, sep, value) => {
				target = decodeURIComponent(value);
				return sep;
			})
			.replace(/[?&]$/, '');
		list = uri[3].split(',').map((host) => ({
			connectionString: uri[1] + (uri[2] || '') + host + rest,
		}));
	} else if (dsn) {
		list = [{ connectionString: dsn }];
	} else {
		const hosts = (process.env.PGHOST || '').split(',');
		const ports = (process.env.PGPORT || '').split(',');
		list =
			hosts.length < 2
				? [{}]
				: hosts.map((host, i) => ({
						host,
						port: Number(ports.length > 1 ? ports[i] : ports[0]) || 5432,
				  }));
	}
	if (target !== 'any' && target !== 'read-write')
		fatal(2, `target_session_attrs "${target}" is not supported (any or read-write)`);
	return { target, list: list.map((s) => Object.assign(s, { password })) };
}

const settings = {
	servers: servers(),
	name: process.env.SCHEDQ_WORKER || `${os.hostname()}:${process.pid}`,
	queues: list('SCHEDQ_QUEUES').length ? list('SCHEDQ_QUEUES') : null, // null: every queue
	caps: list('SCHEDQ_CAPS'),
	batch: Number(process.env.SCHEDQ_BATCH || 10),
	lease: Number(process.env.SCHEDQ_LEASE || 30),
	wait: Number(process.env.SCHEDQ_WAIT || 30),
};

let stopping = false;
let waitingOn = null; // the client while it is in await_task
let wakeUp = () => {}; // ends the pause between reconnections
const unreported = []; // [task, outcome] of failures not yet reported
let pending = []; // [task, outcome] of successes not yet completed

const log = (message) => console.log(`schedq-worker: ${message}`);

function logTask(task, outcome, ms, error) {
	let line = `task=${task.id} kind=${task.kind} attempt=${task.attempt} outcome=${outcome} ms=${ms}`;
	if (error) line += ` error=${JSON.stringify(error)}`;
	console.log(line);
}

/* The worker stops with outcomes it could not report. */
function lostReports(err) {
	if (unreported.length + pending.length > 0)
		log(`stopping with ${unreported.length + pending.length} outcomes not reported (${err.message}):` +
			' their tasks run again after their lease');
}

function onSignal(signal) {
	// Registered with once(): a second signal takes the default action.
	log(`${signal}: finishing the tasks in hand`);
	stopping = true;
	wakeUp();
	if (waitingOn) cancel(waitingOn);
}

/* End the statement the client runs: pg has no call for it, so ask the
 * server from a second connection (any role may cancel its own sessions). */
function cancel(client) {
	// A CancelRequest, as libpq's PQcancel sends it: no login, and a pooler
	// passes it on to the server connection running the statement.  As
	// libpq does, the socket stays open until the other side closes it:
	// PgBouncer 1.18 exits when a client closes before its cancel is sent.
	const request = Buffer.alloc(16);
	request.writeInt32BE(16, 0);
	request.writeInt32BE(80877102, 4);
	request.writeInt32BE(client.processID, 8);
	request.writeInt32BE(client.secretKey, 12);
	const socket = client.host.startsWith('/')
		? net.connect(`${client.host}/.s.PGSQL.${client.port}`)
		: net.connect(client.port, client.host);
	socket.setTimeout(5000, () => socket.destroy());
	socket.on('connect', () => socket.write(request));
	socket.on('end', () => socket.destroy());
	socket.on('error', (err) => log(`could not cancel the wait: ${err.message}`));
}

/* Connect to the first server of the list that takes the connection (and,
 * for read-write, is not read-only).  Throws the last server's error. */
async function connect() {
	let failure;
	for (const server of settings.servers.list) {
		const client = new Client(server);
		client.on('error', () => {}); // a broken connection: the next query fails too
		try {
			await client.connect();
			if (settings.servers.target === 'read-write') {
				const { rows } = await client.query('SHOW transaction_read_only');
				if (rows[0].transaction_read_only === 'on') {
					failure = new Error(`the server at ${client.host}:${client.port} is read-only`);
					failure.code = 'EREADONLY';
					await client.end().catch(() => {});
					continue;
				}
			}
			return client;
		} catch (err) {
			failure = err;
			await client.end().catch(() => {});
		}
	}
	throw failure;
}

/* Run the handler of the task's kind; what to report. */
async function handle(task) {
	const handler = handlers[task.kind];
	try {
		if (!handler) throw new BadInput(`no handler for kind "${task.kind}"`);
		return { result: await handler(task.payload, task.attempt) };
	} catch (err) {
		if (err instanceof BadInput) return { error: `bad input: ${err.message}`, permanent: true };
		if (err instanceof Retry) return { error: err.message, retryIn: err.retryIn, permanent: false };
		return { error: String(err), retryIn: null, permanent: false }; // a bug or an outage
	}
}

async function report(client, task, outcome) {
	const { rows } = await client.query(
		'SELECT schedq.fail($1, $2, retry_in => make_interval(secs => $3),' +
			' permanent => $4) AS status',
		[task.token, outcome.error, outcome.retryIn, outcome.permanent]
	);
	// 'pending' or 'available': it will run again; 'failed': it won't.
	const status = rows[0].status;
	logTask(task, status === 'failed' || status === 'stale' ? status : 'retry', outcome.ms, outcome.error);
}

/* Complete the successes of the last batch and claim the next one: one
 * statement, one commit.  Sent again after a lost connection. */
async function completeAndClaim(client) {
	const { rows } = await client.query(
		'SELECT id, attempt, kind, payload, token' +
			' FROM schedq.complete_and_claim($1::text[], $2, $3::jsonb[],' +
			' queues => $4::text[], caps => $5::text[], n => $6,' +
			' lease => make_interval(secs => $7))',
		[
			pending.map(([task]) => task.token),
			settings.name,
			pending.map(([, outcome]) => JSON.stringify(outcome.result)),
			settings.queues,
			settings.caps,
			settings.batch,
			settings.lease,
		]
	);
	pending.forEach(([task, outcome]) => logTask(task, 'done', outcome.ms));
	pending = [];
	return rows;
}

/* Extend the leases of the tokens in `live`; forget those no longer ours.
 * It shares the worker's client: pg queues the statements of a client. */
function heartbeat(client, live) {
	if (live.size === 0) return;
	client
		.query('SELECT t AS token, schedq.heartbeat(t) AS expires FROM unnest($1::text[]) AS t', [
			[...live],
		])
		.then(({ rows }) => rows.forEach((r) => r.expires === null && live.delete(r.token)))
		.catch((err) => log(`heartbeat failed: ${err.message}`));
}

async function runBatch(client, tasks) {
	const live = new Set(tasks.map((t) => t.token));
	const timer = setInterval(() => heartbeat(client, live), (settings.lease * 1000) / 3);
	try {
		for (const task of tasks) {
			if (!live.has(task.token)) {
				logTask(task, 'stale', 0); // taken back before we got to it
				continue;
			}
			const started = Date.now();
			const outcome = await handle(task);
			outcome.ms = Date.now() - started;
			if ('result' in outcome) {
				pending.push([task, outcome]); // still heartbeaten
				continue;
			}
			try {
				await report(client, task, outcome);
			} catch (err) {
				unreported.push([task, outcome]);
				throw err;
			}
			live.delete(task.token);
		}
	} finally {
		clearInterval(timer);
	}
	// Those the heartbeat found no longer ours: not completed.
	pending.filter(([t]) => !live.has(t.token)).forEach(([t, o]) => logTask(t, 'stale', o.ms));
	pending = pending.filter(([t]) => live.has(t.token));
}

async function work(client) {
	// Reports cut off by a lost connection: a token works from any session,
	// and a stale one changes nothing.
	while (unreported.length > 0) {
		await report(client, ...unreported[0]);
		unreported.shift();
	}
	while (!stopping) {
		const tasks = await completeAndClaim(client);
		if (tasks.length > 0) {
			await runBatch(client, tasks);
			continue;
		}
		waitingOn = client;
		try {
			await client.query(
				'CALL schedq.await_task(queues => $1::text[], caps => $2::text[],' +
					' wait => make_interval(secs => $3))',
				[settings.queues, settings.caps, settings.wait]
			);
		} catch (err) {
			if (!(stopping && err.code === '57014')) throw err; // 57014: canceled
		} finally {
			waitingOn = null;
		}
	}
	if (pending.length > 0) {
		// Stopping: complete, claim nothing.
		const { rows } = await client.query(
			'SELECT schedq.complete_many($1::text[], $2::jsonb[]) AS ok',
			[pending.map(([t]) => t.token), pending.map(([, o]) => JSON.stringify(o.result))]
		);
		pending.forEach(([t, o], i) => logTask(t, rows[0].ok[i] ? 'done' : 'stale', o.ms));
		pending = [];
	}
}

/* The end of the worker: one line on stderr, and schedqctl's exit status
 * for it. */
function fatal(code, message) {
	process.stderr.write(`schedq-worker: ${message}\n`);
	process.exit(code);
}

/* A missing privilege (42501), or schema (3F000): no retry helps. */
const missingPrivilege = (err) => err.code === '42501' || err.code === '3F000';

/* Worth reconnecting for: the connection broke, or the server is going
 * away or busy.  Anything else (a missing GRANT, say) stops the worker. */
function connectionLost(err) {
	if (err.severity) return /^(08|40|53|57)/.test(err.code || '');
	return (
		/^E[A-Z]+$/.test(err.code || '') ||
		/connection|terminated|not queryable/i.test(err.message)
	);
}

async function main() {
	process.once('SIGTERM', onSignal);
	process.once('SIGINT', onSignal);
	log(`${settings.name}: queues ${settings.queues || 'all'}, batches of ${settings.batch}`);
	let backoff = 0.1;
	let connected = false; // once: later failures are retried
	while (!stopping) {
		let client = null;
		let connecting = true;
		try {
			client = await connect();
			log(`connected to ${client.host}:${client.port}`);
			connected = true;
			connecting = false;
			backoff = 0.1;
			await work(client);
		} catch (err) {
			if (connecting && !connected) fatal(3, `could not connect: ${err.message}`);
			if (missingPrivilege(err))
				fatal(4, `missing privilege: ${err.message} (see docs/security.md#roles)`);
			if (!connecting && !connectionLost(err)) throw err;
			if (stopping) {
				lostReports(err);
				break;
			}
			const delay = backoff * (0.75 + Math.random() / 2);
			log(`connection lost (${err.message}); retrying in ${delay.toFixed(1)} s`);
			await new Promise((resolve) => {
				wakeUp = resolve;
				setTimeout(resolve, delay * 1000);
			});
			backoff = Math.min(backoff * 2, 2);
		} finally {
			if (client) await client.end().catch(() => {});
		}
	}
	log('stopped');
}

main().then(
	() => process.exit(0),
	(err) => {
		console.error(`schedq-worker: ${err.stack || err}`);
		process.exit(1);
	}
);
