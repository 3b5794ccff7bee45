/*
 * clients/node/lib/api.js
 *	  Submitting and managing: one function per call of schedq's SQL API
 *	  (docs/reference.md), each taking the caller's pg Client or PoolClient
 *	  (anything with pg's query(text, values)), so that it runs in the
 *	  caller's transaction.  Nothing here begins or commits a transaction.
 */
'use strict';

const { wrap, UnsupportedVersion } = require('./errors');

/* The options of schedq.submit, by their names here and in SQL, with the
 * SQL type of their parameter. */
const SUBMIT_OPTIONS = [
	['queue', 'queue', 'text'],
	['priority', 'priority', 'integer'],
	['runAt', 'run_at', 'timestamptz'],
	['maxAttempts', 'max_attempts', 'integer'],
	['timeout', 'timeout', 'interval'],
	['lockKey', 'lock_key', 'text'],
	['version', 'version', 'bigint'],
	['concurrencyKey', 'concurrency_key', 'text'],
	['requiredCaps', 'required_caps', 'text[]'],
	['budgets', 'budgets', 'text[]'],
	['cost', 'cost', 'numeric'],
	['runId', 'run_id', 'bigint'],
	['dependsOn', 'depends_on', 'bigint[]'],
	['dedupKey', 'dedup_key', 'text'],
];
const SCHEDULE_OPTIONS = [
	['timezone', 'timezone', 'text'],
	['enabled', 'enabled', 'boolean'],
	...SUBMIT_OPTIONS.filter(([name]) =>
		[
			'queue',
			'priority',
			'maxAttempts',
			'timeout',
			'lockKey',
			'concurrencyKey',
			'requiredCaps',
			'budgets',
			'cost',
		].includes(name)
	),
];
const SUBMIT_KEYS = new Map(SUBMIT_OPTIONS.map(([name, sql]) => [name, sql]));

/* An interval: a number of seconds, or PostgreSQL's interval text. */
function interval(value) {
	return typeof value === 'number' ? `${value} seconds` : value;
}

/* A value as node-postgres sends it for its SQL type. */
function param(value, type) {
	if (value === null) return null;
	if (type === 'interval') return interval(value);
	if (type === 'bigint' || type === 'numeric') return String(value);
	if (type === 'bigint[]') return value.map(String);
	return value;
}

/* Named arguments for the options given (undefined: the SQL default;
 * null is passed on, and refused by schedq where it must be). */
function namedArgs(options, known, values, what) {
	const args = [];
	for (const key of Object.keys(options || {})) {
		if (!known.some(([name]) => name === key))
			throw new TypeError(`${what}: unknown option "${key}"`);
	}
	for (const [name, sql, type] of known) {
		const value = options ? options[name] : undefined;
		if (value === undefined) continue;
		values.push(param(value, type));
		args.push(`${sql} => $${values.length}::${type}`);
	}
	return args;
}

/* Run a statement, errors mapped to their named classes. */
async function query(db, text, values) {
	try {
		return await db.query(text, values);
	} catch (err) {
		throw wrap(err);
	}
}

/* One row's one column. */
async function value(db, text, values) {
	const { rows } = await query(db, text, values);
	return rows[0].v;
}

/* A task id: bigint, returned as a Number (ids stay far below 2^53). */
const id = (v) => (v === null ? null : Number(v));

/* schedq.submit: the new task's id (or the live holder's of dedupKey). */
async function submit(db, kind, payload = {}, options = {}) {
	const values = [kind, JSON.stringify(payload === undefined ? {} : payload)];
	const args = namedArgs(options, SUBMIT_OPTIONS, values, 'submit');
	const sql = `SELECT schedq.submit($1::text, $2::jsonb${args.map((a) => ', ' + a).join('')}) AS v`;
	return id(await value(db, sql, values));
}

/* A task of submitMany as schedq.submit_many takes it. */
function manyTask(task) {
	const out = {};
	for (const [key, v] of Object.entries(task)) {
		if (v === undefined) continue;
		if (key === 'kind' || key === 'payload') out[key] = v;
		else if (SUBMIT_KEYS.has(key))
			out[SUBMIT_KEYS.get(key)] =
				key === 'timeout' ? interval(v) : v instanceof Date ? v.toISOString() : v;
		else throw new TypeError(`submitMany: unknown option "${key}"`);
	}
	return out;
}

/* schedq.submit_many: every task or none, in one statement; their ids,
 * in order. */
async function submitMany(db, tasks) {
	const { rows } = await query(db, 'SELECT v FROM schedq.submit_many($1::jsonb) AS v', [
		JSON.stringify(tasks.map(manyTask)),
	]);
	return rows.map((r) => id(r.v));
}

/* schedq.submit_sql: a task the SQL executor runs. */
async function submitSql(db, command, options = {}) {
	const values = [command];
	const known = SUBMIT_OPTIONS;
	const args = namedArgs(options, known, values, 'submitSql');
	const sql = `SELECT schedq.submit_sql($1::text${args.map((a) => ', ' + a).join('')}) AS v`;
	return id(await value(db, sql, values));
}

/* schedq.schedule: creates or replaces a schedule; its name. */
async function schedule(db, name, spec, kind, payload = {}, options = {}) {
	const values = [name, spec, kind, JSON.stringify(payload)];
	const args = namedArgs(options, SCHEDULE_OPTIONS, values, 'schedule');
	const sql =
		'SELECT schedq.schedule($1::text, $2::text, $3::text, $4::jsonb' +
		`${args.map((a) => ', ' + a).join('')}) AS v`;
	return value(db, sql, values);
}

const unschedule = (db, name) => value(db, 'SELECT schedq.unschedule($1::text) AS v', [name]);
const setScheduleEnabled = (db, name, enabled) =>
	value(db, 'SELECT schedq.set_schedule_enabled($1::text, $2::boolean) AS v', [name, enabled]);

/* schedq.create_run: a new run's id. */
async function createRun(db, options = {}) {
	const values = [];
	const args = namedArgs(
		options,
		[
			['name', 'name', 'text'],
			['failurePolicy', 'failure_policy', 'text'],
		],
		values,
		'createRun'
	);
	return id(await value(db, `SELECT schedq.create_run(${args.join(', ')}) AS v`, values));
}

const cancelRun = (db, runId) =>
	value(db, 'SELECT schedq.cancel_run($1::bigint) AS v', [String(runId)]);
const cancel = (db, taskId) => value(db, 'SELECT schedq.cancel($1::bigint) AS v', [String(taskId)]);
const retry = (db, taskId) => value(db, 'SELECT schedq.retry($1::bigint) AS v', [String(taskId)]);
const pauseQueue = async (db, queue) => {
	await query(db, 'SELECT schedq.pause_queue($1::text)', [queue]);
};
const resumeQueue = async (db, queue) => {
	await query(db, 'SELECT schedq.resume_queue($1::text)', [queue]);
};
/* maxActive null: no limit. */
const setConcurrencyLimit = async (db, key, maxActive) => {
	await query(db, 'SELECT schedq.set_concurrency_limit($1::text, $2::integer)', [key, maxActive]);
};
/* period: seconds or interval text; null or omitted: no refill. */
const setBudget = async (db, name, hardLimit, period = null) => {
	await query(db, 'SELECT schedq.set_budget($1::text, $2::numeric, $3::interval)', [
		name,
		String(hardLimit),
		period === null ? null : interval(period),
	]);
};

/* The schedq versions this library supports. */
const SUPPORTED = ['1.2'];

/* The version of schedq installed in the database; UnsupportedVersion when
 * it is missing or not one this library supports. */
async function checkVersion(db) {
	const { rows } = await query(
		db,
		"SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'schedq'"
	);
	if (rows.length === 0)
		throw new UnsupportedVersion(
			'schedq is not installed in this database (CREATE EXTENSION schedq)'
		);
	const version = rows[0].extversion;
	if (!SUPPORTED.includes(version))
		throw new UnsupportedVersion(
			`schedq ${version} is installed; this library needs schedq ${SUPPORTED.join(' or ')}` +
				' (ALTER EXTENSION schedq UPDATE)'
		);
	return version;
}

module.exports = {
	submit,
	submitMany,
	submitSql,
	schedule,
	unschedule,
	setScheduleEnabled,
	createRun,
	cancelRun,
	cancel,
	retry,
	pauseQueue,
	resumeQueue,
	setConcurrencyLimit,
	setBudget,
	checkVersion,
	query,
	interval,
	SUPPORTED_VERSIONS: SUPPORTED,
};
