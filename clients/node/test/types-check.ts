// clients/node/test/types-check.ts -- compiled (never run) by `tsc --noEmit`
// in types.test.js: the library used as an application would, through
// index.d.ts.  A wrong type here is a failing test.
import { Client, Pool } from 'pg';
import * as schedq from '..';

async function app(client: Client, pool: Pool): Promise<void> {
	await client.query('BEGIN');
	const id: number = await schedq.submit(client, 'email', { to: 'a@example.com' }, {
		queue: 'mail',
		priority: 1,
		runAt: new Date(),
		maxAttempts: 3,
		timeout: '5 minutes',
		lockKey: 'k',
		version: 2,
		concurrencyKey: 'c',
		requiredCaps: ['smtp'],
		budgets: ['b'],
		cost: 1.5,
		runId: null,
		dependsOn: [],
		dedupKey: 'd',
	});
	await client.query('COMMIT');
	const ids: number[] = await schedq.submitMany(pool, [{ kind: 'email', payload: {}, timeout: 30 }]);
	const name: string = await schedq.schedule(client, 'n', '@hourly', 'k', {}, { timezone: 'UTC' });
	const ok: boolean = await schedq.setScheduleEnabled(client, name, false);
	const run: number = await schedq.createRun(client, { failurePolicy: 'continue' });
	await schedq.cancelRun(client, run);
	await schedq.cancel(client, id + ids[0]);
	await schedq.setConcurrencyLimit(client, 'c', null);
	const version: string = await schedq.checkVersion(client);
	void [ok, version];
	try {
		await schedq.submit(client, '');
	} catch (err) {
		if (err instanceof schedq.InvalidArgument) {
			const state: string | undefined = err.sqlstate;
			void state;
		}
	}
}

const worker = new schedq.Worker({
	queues: ['mail'],
	concurrency: 8,
	handlers: {
		async email(job: schedq.Job) {
			await job.progress(50, 'half');
			if (job.signal.aborted) throw new schedq.RetryAfter('later', 10);
			return { sent: job.payload };
		},
	},
	log: console.log,
});
worker.register('other', async (job) => {
	const db = new Client();
	const done: boolean = await job.completeIn(db, { ok: true });
	if (!done) throw new schedq.PermanentFailure('stale');
});
worker.on('outcome', (job, outcome, ms, error) => {
	const o: 'done' | 'retry' | 'failed' | 'stale' = outcome;
	void [job.id, o, ms, error];
});
void worker.run().then(() => worker.stop({ now: true }));
void app;
