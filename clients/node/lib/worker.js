/*
 * clients/node/lib/worker.js
 *	  A worker pool in one process: handlers by kind, run by ONE claim loop
 *	  that claims for every free handler slot at once and reports the
 *	  successes finished since its last call together with the next claim,
 *	  in one schedq.complete_and_claim statement.
 *
 *	  Three connections a pool: `main` runs complete_and_claim (and
 *	  complete_many while stopping); `waiter` runs CALL schedq.await_task
 *	  when there is nothing to claim, so that a handler finishing meanwhile
 *	  is reported at once on `main`; `aux` runs the heartbeats (every
 *	  running token, one statement, every third of the lease), schedq.fail
 *	  and schedq.progress.
 *
 *	  A success counts as done when the statement that completes it has
 *	  committed: the 'outcome' event says so only then.  A lost connection
 *	  (any of the three) closes all three and opens them again after a
 *	  capped, jittered back-off; the handlers keep running, and what they
 *	  finished is reported from the new sessions (a token works from any
 *	  session; a stale one changes nothing).  Delivery is at least once.
 */
'use strict';

const EventEmitter = require('events');
const os = require('os');
const errors = require('./errors');
const { connector, cancel } = require('./connect');
const { checkVersion } = require('./api');

const { wrap, SchedqError, PermanentFailure, RetryAfter, CouldNotConnect } = errors;

const CLAIM =
	'SELECT id, attempt, queue, kind, payload, priority, run_id, lease_expires_at, token' +
	' FROM schedq.complete_and_claim($1::text[], $2::text, $3::jsonb[],' +
	' queues => $4::text[], caps => $5::text[], n => $6::integer,' +
	' lease => make_interval(secs => $7))';
const AWAIT =
	'CALL schedq.await_task(queues => $1::text[], caps => $2::text[],' +
	' wait => make_interval(secs => $3))';
const HEARTBEAT =
	'SELECT t AS token, schedq.heartbeat(t) AS expires FROM unnest($1::text[]) AS t';
const FAIL =
	'SELECT schedq.fail($1::text, $2::text, retry_in => make_interval(secs => $3),' +
	' permanent => $4::boolean) AS status';
const COMPLETE_MANY = 'SELECT schedq.complete_many($1::text[], $2::jsonb[]) AS ok';

/* The driver's own error under a mapped one. */
const raw = (err) => (err instanceof SchedqError && err.cause ? err.cause : err);

/* Worth reconnecting for: the connection broke, the server is going away
 * or busy, or it turned read-only (25006: a primary fenced off in a
 * failover; the next connection finds the writable one). */
function connectionLost(error) {
	const err = raw(error);
	if (!err) return false;
	if (err.severity) return /^(08|40|53|57)/.test(err.code || '') || err.code === '25006';
	return /^E[A-Z]+$/.test(err.code || '') || /connection|terminated|not queryable/i.test(err.message);
}

/* A claimed task, as a handler sees it. */
class Job {
	constructor(worker, row) {
		this.id = Number(row.id);
		this.attempt = row.attempt;
		this.queue = row.queue;
		this.kind = row.kind;
		this.payload = row.payload;
		this.priority = row.priority;
		this.runId = row.run_id === null ? null : Number(row.run_id);
		this.leaseExpiresAt = row.lease_expires_at;
		this.token = row.token;
		this._worker = worker;
		this._abort = null; // made when a handler asks for the signal
		this._reason = null; // why the attempt is no longer ours
		this._external = undefined; // completeIn's answer
	}

	/* Aborted when the attempt is no longer ours (canceled, taken back)
	 * or the worker stops at once. */
	get signal() {
		if (!this._abort) {
			this._abort = new AbortController();
			if (this._reason) this._abort.abort(this._reason);
		}
		return this._abort.signal;
	}

	_stop(reason) {
		if (this._reason) return;
		this._reason = reason;
		if (this._abort) this._abort.abort(reason);
	}

	/* schedq.progress: percent 0..100 (null: unknown) and a note; the new
	 * lease end, or null when the token is stale. */
	async progress(percent, note = null) {
		const { rows } = await this._worker._aux(
			'SELECT schedq.progress($1::text, $2::real, $3::text) AS v',
			[this.token, percent, note]
		);
		return rows[0].v;
	}

	/* schedq.heartbeat now (the pool beats every third of the lease). */
	async heartbeat() {
		const { rows } = await this._worker._aux('SELECT schedq.heartbeat($1::text) AS v', [
			this.token,
		]);
		return rows[0].v;
	}

	/* Complete the task on the caller's client, in the caller's
	 * transaction: the handler's writes and the completion commit together
	 * or not at all.  The pool does not complete it again.  True, or false
	 * when the token is stale (the task was canceled or taken back: roll
	 * back). */
	async completeIn(db, result = null) {
		let done;
		try {
			const { rows } = await db.query('SELECT schedq.complete($1::text, $2::jsonb) AS v', [
				this.token,
				result === undefined || result === null ? null : JSON.stringify(result),
			]);
			done = rows[0].v;
		} catch (err) {
			throw wrap(err);
		}
		this._external = done;
		return done;
	}
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/* With a prefetch, the longest a success waits for the next claim to
 * carry its completion (ms); then it is completed on its own. */
const COMPLETE_WITHIN = 100;

class Worker extends EventEmitter {
	/*
	 * options: handlers ({kind: async (job) => result}), connection (see
	 * connect.js), queues (null: every queue), caps, concurrency (8),
	 * prefetch (tasks claimed ahead of a free handler, 0), batch (most
	 * tasks a claim asks for: concurrency, or prefetch when larger; at
	 * most 1000), lease and wait
	 * (seconds: 30, 30), name (host:pid), handleSignals (true), log (a
	 * function given one line per event, e.g. console.log).
	 */
	constructor(options = {}) {
		super();
		const o = options;
		this.handlers = new Map(Object.entries(o.handlers || {}));
		this.connect = connector(o.connection);
		this.name = o.name || `${os.hostname()}:${process.pid}`;
		this.queues = o.queues && o.queues.length ? [...o.queues] : null;
		this.caps = o.caps ? [...o.caps] : [];
		this.concurrency = o.concurrency || 8;
		this.prefetch = o.prefetch || 0;
		// With a prefetch, claims of a prefetch's worth (see _work).
		this.batch = Math.min(o.batch || Math.max(this.concurrency, this.prefetch), 1000);
		this.lease = o.lease || 30;
		this.wait = o.wait || 30;
		this.handleSignals = o.handleSignals !== false;
		if (o.log) attachLog(this, o.log);
		for (const [n, v] of [
			['concurrency', this.concurrency],
			['batch', this.batch],
			['lease', this.lease],
			['wait', this.wait],
		])
			if (!(v > 0)) throw new TypeError(`Worker: ${n} must be positive`);

		this.jobs = new Map(); // token -> Job: every attempt not yet reported
		this.inflight = 0; // handlers running
		this.buffer = []; // claimed, waiting for a free handler (prefetch)
		this.done = []; // [job, result, ms, when it ended] to complete
		this.failures = []; // [job, failure, ms] to report with fail
		this.conns = null;
		this.stopping = false;
		this.hard = false;
		this.running = false;
		this._wake = null;
		this._changed = null;
		this._completeTimer = null;
		this._awaiting = null;
		this._sessionError = null;
		this._reporting = false;
		this._dirty = false;
		this._auxTail = Promise.resolve();
	}

	/* Register the handler of a kind: async (job) => result (JSON). */
	register(kind, handler) {
		this.handlers.set(kind, handler);
		return this;
	}

	/* Stop claiming and drain: the running handlers finish and are
	 * reported; run() then resolves.  { now: true }: stop at once, the
	 * tasks in hand left to the reaper after their lease. */
	stop({ now = false } = {}) {
		this.stopping = true;
		if (now && !this.hard) {
			this.hard = true;
			for (const job of this.jobs.values()) job._stop(new Error('the worker stopped'));
		}
		if (this._awaiting && this.conns) cancel(this.conns.waiter);
		if (this._sleepWake) this._sleepWake();
		this._notify();
	}

	/* Work until stopped; rejects on what no reconnection helps (the first
	 * connection fails: CouldNotConnect; a missing privilege:
	 * PermissionDenied; an unsupported schedq: UnsupportedVersion). */
	async run() {
		if (this.running) throw new Error('Worker.run: already running');
		this.running = true;
		const signals = [];
		if (this.handleSignals)
			for (const sig of ['SIGTERM', 'SIGINT']) {
				const on = () => {
					this.emit('signal', sig, this.stopping);
					this.stop({ now: this.stopping });
				};
				process.on(sig, on);
				signals.push([sig, on]);
			}
		this.emit('start');
		const beat = setInterval(() => this._heartbeat(), (this.lease * 1000) / 3);
		try {
			await this._loop();
		} finally {
			clearInterval(beat);
			for (const [sig, on] of signals) process.removeListener(sig, on);
			this.running = false;
		}
		this.emit('stopped', this.jobs.size);
	}

	_idle() {
		return (
			this.inflight === 0 &&
			this.buffer.length === 0 &&
			this.done.length === 0 &&
			this.failures.length === 0
		);
	}

	async _loop() {
		let backoff = 0.1;
		let connected = false; // once: later failures are retried
		while (!this.hard && !(this.stopping && this._idle())) {
			let conns = null;
			try {
				conns = await this._open(connected);
				connected = true;
				backoff = 0.1;
				await checkVersion(conns.main);
				this.emit('connected', conns.main.host, conns.main.port);
				await this._work(conns);
				return;
			} catch (error) {
				const err = wrap(error);
				if (this.hard) return;
				if (err instanceof CouldNotConnect || !connectionLost(err)) throw err;
				if (conns) await this._close(conns);
				conns = null;
				const delay = backoff * (0.75 + Math.random() / 2);
				this.emit('reconnecting', err, delay, raw(err).code === '25006');
				await new Promise((resolve) => {
					this._sleepWake = resolve;
					setTimeout(resolve, delay * 1000);
				});
				this._sleepWake = null;
				backoff = Math.min(backoff * 2, 2);
			} finally {
				if (conns) await this._close(conns);
			}
		}
	}

	/* The three connections, or the first failure: CouldNotConnect before
	 * the first session, else the error as it is (retried). */
	async _open(connected) {
		const conns = {};
		try {
			for (const name of ['main', 'waiter', 'aux']) conns[name] = await this.connect();
			return conns;
		} catch (err) {
			await this._close(conns);
			if (connected) throw err;
			throw new CouldNotConnect(`could not connect: ${err.message}`, {
				sqlstate: err.code,
				cause: err,
			});
		}
	}

	async _close(conns) {
		if (this.conns === conns) this.conns = null;
		if (this._awaiting && conns.waiter && this._awaitingOn === conns.waiter)
			await cancel(conns.waiter);
		await Promise.all(
			Object.values(conns).map((c) => c && c.end().catch(() => {}))
		);
	}

	/* Something changed: a handler ended, the wait ended, a report failed,
	 * stop() was called. */
	_notify() {
		if (this._wake) {
			const wake = this._wake;
			this._wake = null;
			this._changed = null;
			wake();
		} else this._dirty = true; // the loop looks again before it waits
	}

	_changedPromise() {
		if (this._dirty) {
			this._dirty = false;
			return Promise.resolve();
		}
		if (!this._changed) this._changed = new Promise((resolve) => (this._wake = resolve));
		return this._changed;
	}

	/* An error of the current session ends it (one of a session already
	 * closed is no news). */
	_lost(err, conns) {
		if (conns && this.conns === conns && !this._sessionError) {
			this._sessionError = err;
			this._notify();
		}
	}

	_checkSession() {
		if (this._sessionError) {
			const err = this._sessionError;
			this._sessionError = null;
			throw err;
		}
	}

	/* A statement on `aux`, after those sent before it (pg 9 will not
	 * queue them itself). */
	_aux(text, values) {
		const conns = this.conns;
		if (!conns) return Promise.reject(new SchedqError('the worker is not connected'));
		const run = this._auxTail.then(() => conns.aux.query(text, values));
		this._auxTail = run.catch(() => {});
		return run.catch((err) => {
			if (connectionLost(err)) this._lost(err, conns);
			throw wrap(err);
		});
	}

	async _work(conns) {
		this.conns = conns;
		this._sessionError = null;
		this._reportFailures();
		for (;;) {
			this._checkSession();
			if (this.hard) return;
			if (this.stopping) {
				if (this.done.length > 0) {
					await this._completeMany(conns.main);
					continue;
				}
				if (this._idle()) return;
				await this._changedPromise();
				continue;
			}
			const room = this.concurrency + this.prefetch - this.inflight - this.buffer.length;
			const n = Math.min(room, this.batch);
			if (n <= 0) {
				if (this.done.length > 0) await this._completeMany(conns.main);
				else await this._changedPromise();
				continue;
			}
			if (n < this.batch && this.buffer.length > 0) {
				// Claimed tasks still wait for a handler: the next claim
				// waits until a whole batch fits, and takes the completions
				// with it. Claims of a few tasks each cost a statement and a
				// commit, where a batch costs hardly more than one. A
				// success waits at most COMPLETE_WITHIN for it.
				const held = this.done.length > 0 ? Date.now() - this.done[0][3] : 0;
				if (held >= COMPLETE_WITHIN) {
					await this._completeMany(conns.main);
					continue;
				}
				if (this.done.length > 0 && !this._completeTimer) {
					this._completeTimer = setTimeout(() => {
						this._completeTimer = null;
						this._notify();
					}, COMPLETE_WITHIN - held);
					this._completeTimer.unref();
				}
				await this._changedPromise();
				continue;
			}
			const claimed = await this._completeAndClaim(conns.main, n);
			if (claimed === n) continue;
			// Nothing more to claim now: wait for a task, or a handler's end.
			if (!this._awaiting || this._awaitingOn !== conns.waiter) this._await(conns);
			await this._changedPromise();
			await new Promise(setImmediate); // the handlers ending with it: one batch
		}
	}

	/* Complete the successes in hand and claim up to n more. */
	async _completeAndClaim(client, n) {
		const batch = this.done.splice(0, 1000);
		for (const [job] of batch) job._reporting = true;
		let rows;
		try {
			({ rows } = await client.query(CLAIM, [
				batch.map(([job]) => job.token),
				this.name,
				batch.map(([, json]) => json),
				this.queues,
				this.caps,
				n,
				this.lease,
			]));
		} catch (err) {
			for (const [job] of batch) job._reporting = false;
			this.done = batch.concat(this.done); // sent again, from the next session
			if (err.code === '54000') return this._tooLarge(client, batch);
			throw err;
		}
		for (const [job, , ms] of batch) this._finished(job, 'done', ms);
		if (this.hard) return rows.length; // left to the reaper
		for (const row of rows) {
			const job = new Job(this, row);
			this.jobs.set(job.token, job);
			this.buffer.push(job);
		}
		this._fill();
		return rows.length;
	}

	/* A result over schedq.max_payload failed the batch (54000): complete
	 * them one by one, and fail for good those that are too large. */
	async _tooLarge(client, batch) {
		this.done = this.done.filter((d) => !batch.includes(d));
		for (const d of batch) {
			const [job, json, ms] = d;
			try {
				const { rows } = await client.query(COMPLETE_MANY, [[job.token], [json]]);
				this._finished(job, rows[0].ok[0] ? 'done' : 'stale', ms);
			} catch (err) {
				if (err.code !== '54000') {
					this.done.unshift(...batch.slice(batch.indexOf(d)));
					throw err;
				}
				const f = new PermanentFailure(`the result is too large: ${err.message}`);
				this.failures.push([job, failure(f), ms]);
			}
		}
		this._reportFailures();
		return 0;
	}

	/* Stopping: complete the successes in hand, claim nothing. */
	async _completeMany(client) {
		const batch = this.done.splice(0, 1000);
		for (const [job] of batch) job._reporting = true;
		let rows;
		try {
			({ rows } = await client.query(COMPLETE_MANY, [
				batch.map(([job]) => job.token),
				batch.map(([, json]) => json),
			]));
		} catch (err) {
			for (const [job] of batch) job._reporting = false;
			this.done = batch.concat(this.done);
			if (err.code === '54000') return this._tooLarge(client, batch);
			throw err;
		}
		batch.forEach(([job, , ms], i) => this._finished(job, rows[0].ok[i] ? 'done' : 'stale', ms));
	}

	_await(conns) {
		const waiting = conns.waiter
			.query(AWAIT, [this.queues, this.caps, this.wait])
			.catch((err) => {
				if (!(this.stopping && err.code === '57014')) this._lost(err, conns);
			})
			.finally(() => {
				if (this._awaiting !== waiting) return; // an earlier session's
				this._awaiting = null;
				this._awaitingOn = null;
				this._notify();
			});
		this._awaiting = waiting;
		this._awaitingOn = conns.waiter;
	}

	/* Start the claimed tasks while a handler is free. */
	_fill() {
		while (this.inflight < this.concurrency && this.buffer.length > 0 && !this.hard)
			this._start(this.buffer.shift());
	}

	_start(job) {
		this.inflight++;
		const started = Date.now();
		const handler = this.handlers.get(job.kind);
		let promise;
		try {
			if (!handler) throw new Error(`no handler for kind "${job.kind}"`);
			promise = Promise.resolve(handler(job));
		} catch (err) {
			promise = Promise.reject(err);
		}
		promise.then(
			(result) => this._ended(job, started, null, result),
			(err) => this._ended(job, started, err ?? new Error(`the handler rejected with ${err}`))
		);
	}

	_ended(job, started, err, result) {
		const now = Date.now();
		const ms = now - started;
		this.inflight--;
		if (this.hard) return;
		this._fill();
		if (job._reason && !this.jobs.has(job.token)) {
			// taken back while it ran: already logged stale
		} else if (err === null && job._external !== undefined) {
			this._finished(job, job._external ? 'done' : 'stale', ms);
		} else if (err === null) {
			let json;
			try {
				json = result === undefined || result === null ? null : JSON.stringify(result);
			} catch (e) {
				json = e;
			}
			if (typeof json === 'string' || json === null || json === undefined) this.done.push([job, json ?? null, ms, now]);
			else {
				this.failures.push([job, failure(new PermanentFailure(`the result is not JSON: ${json.message}`)), ms]);
				this._reportFailures();
			}
		} else {
			this.failures.push([job, failure(err), ms]);
			this._reportFailures();
		}
		this._notify();
	}

	_finished(job, outcome, ms, error) {
		if (!this.jobs.delete(job.token)) return; // told already
		this.emit('outcome', job, outcome, ms, error);
	}

	/* Report the failures in hand with schedq.fail, in order, on aux. */
	async _reportFailures() {
		const conns = this.conns;
		if (this._reporting || !conns) return;
		this._reporting = true;
		try {
			while (this.failures.length > 0 && this.conns === conns && !this.hard) {
				const [job, f, ms] = this.failures[0];
				job._reporting = true;
				const { rows } = await this._aux(FAIL, [job.token, f.message, f.retryIn, f.permanent]);
				this.failures.shift();
				// 'pending' or 'available': it runs again; 'failed': it won't.
				const status = rows[0].status;
				const outcome = status === 'failed' || status === 'stale' ? status : 'retry';
				this._finished(job, outcome, ms, f.message);
			}
		} catch (err) {
			if (this.failures.length > 0) this.failures[0][0]._reporting = false;
			// A lost connection ends its session (_aux); anything else, the worker.
			if (!connectionLost(err) && this.conns === conns) this._sessionError = err;
		} finally {
			this._reporting = false;
			// A new session came while this one's report hung: go on there.
			if (this.conns && this.conns !== conns) this._reportFailures();
			this._notify();
		}
	}

	/* Extend the leases of every attempt in hand; forget those no longer
	 * ours (their handlers see job.signal aborted). */
	_heartbeat() {
		if (!this.conns || this.jobs.size === 0) return;
		const tokens = [...this.jobs.keys()];
		this._aux(HEARTBEAT, [tokens])
			.then(({ rows }) => {
				for (const r of rows) {
					if (r.expires !== null) continue;
					const job = this.jobs.get(r.token);
					// One being reported: its own report may have ended it.
					if (!job || job._reporting) continue;
					job._stop(new Error("the task is no longer this attempt's"));
					let ms = 0;
					for (const list of [this.done, this.failures]) {
						const i = list.findIndex(([j]) => j === job);
						if (i >= 0) ms = list.splice(i, 1)[0][2];
					}
					const b = this.buffer.indexOf(job);
					if (b >= 0) this.buffer.splice(b, 1);
					this._finished(job, 'stale', ms);
				}
			})
			.catch((err) => {
				// A lost connection ends the session (_aux); anything else is told.
				if (!connectionLost(err)) this.emit('heartbeatError', err);
			});
	}
}

/* What to report for a handler's error.  The message as schedq takes it:
 * no NUL, at most 65536 bytes (16384 characters are). */
function failure(err) {
	let f;
	if (err instanceof PermanentFailure) f = { message: err.message, retryIn: null, permanent: true };
	else if (err instanceof RetryAfter)
		f = { message: err.message, retryIn: err.retryIn, permanent: false };
	else f = { message: String(err), retryIn: null, permanent: false };
	f.message = String(f.message).replace(/\0/g, '');
	if (f.message.length > 16384) f.message = `${f.message.slice(0, 16381)}...`;
	return f;
}

/* One line per event, for options.log. */
function attachLog(worker, log) {
	const say = (line) => log(`schedq-worker: ${line}`);
	worker.on('start', () =>
		say(
			`${worker.name}: queues ${worker.queues || 'all'}, ${worker.concurrency} handlers,` +
				` batches of ${worker.batch}`
		)
	);
	worker.on('connected', (host, port) => say(`connected to ${host}:${port}`));
	worker.on('reconnecting', (err, delay, readOnly) =>
		say(
			`${readOnly ? 'server read-only' : 'connection lost'} (${err.message});` +
				` retrying in ${delay.toFixed(1)} s`
		)
	);
	worker.on('signal', (sig, again) =>
		say(again ? `${sig} again: stopping now` : `${sig}: finishing the tasks in hand`)
	);
	worker.on('heartbeatError', (err) => say(`heartbeat failed: ${err.message}`));
	worker.on('stopped', (left) =>
		say(left ? `stopped, ${left} tasks left to the reaper` : 'stopped')
	);
	worker.on('outcome', (job, outcome, ms, error) => {
		let line = `task=${job.id} kind=${job.kind} attempt=${job.attempt} outcome=${outcome} ms=${ms}`;
		if (error) line += ` error=${JSON.stringify(error)}`;
		log(line);
	});
}

module.exports = { Worker, Job, connectionLost, sleep };
