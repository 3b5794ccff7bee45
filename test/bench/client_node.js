// test/bench/client_node.js -- client_node.sh's measurements, one per run:
//   node client_node.js lib CONN N   the schedq library (clients/node): a
//                                    Worker, 8 handlers, one process
//   node client_node.js lib500 ...   the same with prefetch 500 (tasks
//                                    claimed ahead, as graphile-worker's
//                                    localQueue; claims of 500)
//   node client_node.js raw CONN N   the same statements without the
//                                    library: one loop of
//                                    complete_and_claim(tokens, ..., n => 8)
//                                    running 8 handlers per batch
//   node client_node.js raw500 ...   the same loop, n => 500, the 500
//                                    handled 8 at a time
//   node client_node.js gw CONN N    graphile-worker (test/bench/peers),
//                                    8 handlers, localQueue 500,
//                                    completeJobBatchDelay 0; adds its N
//                                    jobs first (addJobs), untimed
// The schedq tasks (N no-op tasks, kind noop) are submitted before by the
// script.  Prints "NAME SECONDS TASKS": from the first handler call to the
// last completion committed (schedq: the statement that completed it
// returned; graphile-worker: its job table seen empty, polled every 5 ms).
'use strict';

const path = require('path');
const [mode, conn, nText] = process.argv.slice(2);
const N = Number(nText);
const HANDLERS = 8;
const schedqDir = path.join(__dirname, '../../clients/node');
const { Client } = require(require.resolve('pg', { paths: [schedqDir] }));

const noop = async () => null;
const now = () => Number(process.hrtime.bigint()) / 1e9;
const report = (t0, t1, n) => console.log(`${mode} ${(t1 - t0).toFixed(4)} ${n}`);

async function lib(prefetch = 0) {
	const { Worker } = require(schedqDir);
	let t0 = null;
	let n = 0;
	const worker = new Worker({
		connection: conn,
		concurrency: HANDLERS,
		prefetch,
		handleSignals: false,
		handlers: {
			noop: async () => {
				if (t0 === null) t0 = now();
				return null;
			},
		},
	});
	let t1;
	worker.on('outcome', (job, outcome) => {
		if (outcome !== 'done') throw new Error(`task ${job.id}: ${outcome}`);
		if (++n === N) {
			t1 = now();
			worker.stop();
		}
	});
	await worker.run();
	report(t0, t1, n);
}

const CLAIM =
	'SELECT id, attempt, queue, kind, payload, priority, run_id, lease_expires_at, token' +
	' FROM schedq.complete_and_claim($1::text[], $2::text, $3::jsonb[],' +
	' queues => $4::text[], caps => $5::text[], n => $6::integer,' +
	' lease => make_interval(secs => $7))';

/* Run fn over items, `width` at a time. */
async function pool(items, width, fn) {
	const out = new Array(items.length);
	let next = 0;
	const lane = async () => {
		while (next < items.length) {
			const i = next++;
			out[i] = await fn(items[i]);
		}
	};
	await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
	return out;
}

async function raw(batch = HANDLERS) {
	const client = new Client({ connectionString: conn });
	await client.connect();
	let tokens = [];
	let results = [];
	let t0 = null;
	let n = 0;
	for (;;) {
		const { rows } = await client.query(CLAIM, [tokens, 'raw', results, null, [], batch, 30]);
		n += tokens.length;
		if (rows.length === 0) break;
		if (t0 === null) t0 = now();
		const out = await pool(rows, HANDLERS, (r) => noop(r.payload));
		tokens = rows.map((r) => r.token);
		results = out.map((o) => JSON.stringify(o));
	}
	const t1 = now();
	await client.end();
	report(t0, t1, n);
}

async function gw() {
	const peers = path.join(__dirname, 'peers');
	const { run, makeWorkerUtils } = require(require.resolve('graphile-worker', { paths: [peers] }));
	const utils = await makeWorkerUtils({ connectionString: conn });
	await utils.migrate();
	for (let lo = 0; lo < N; lo += 5000) {
		const jobs = [];
		for (let i = lo; i < Math.min(lo + 5000, N); i++) jobs.push({ identifier: 'noop', payload: { i } });
		await utils.addJobs(jobs);
	}
	await utils.release();
	const client = new Client({ connectionString: conn });
	await client.connect();
	let t0 = null;
	let n = 0;
	const runner = await run({
		connectionString: conn,
		concurrency: HANDLERS,
		noHandleSignals: true,
		pollInterval: 1000,
		logger: new (require(require.resolve('graphile-worker', { paths: [peers] })).Logger)(() => () => {}),
		preset: { worker: { localQueue: { size: 500 }, completeJobBatchDelay: 0 } },
		taskList: {
			noop: async () => {
				if (t0 === null) t0 = now();
				n++;
			},
		},
	});
	let t1;
	for (;;) {
		const { rows } = await client.query('SELECT count(*)::int AS c FROM graphile_worker._private_jobs');
		if (rows[0].c === 0) {
			t1 = now();
			break;
		}
		await new Promise((r) => setTimeout(r, 5));
	}
	await runner.stop();
	await client.end();
	report(t0, t1, n);
}

({ lib, lib500: () => lib(500), raw, raw500: () => raw(500), gw })[mode]().catch((err) => {
	console.error(err);
	process.exit(1);
});
