// test/bench/peers/add_jobs.js -- submit.sh's peer measurement (BENCH_PEERS=1):
// CALLS batches of N jobs from Node.js, through graphile-worker's addJobs and
// through schedq.submit_many (one statement, the JSON array as a parameter,
// node-postgres), alternating; prints "gw MS" and "schedq MS" per call.
// Usage: node add_jobs.js CONNSTRING N CALLS
'use strict';
const { makeWorkerUtils } = require('graphile-worker');
const { Client } = require('pg');

async function main() {
  const [conn, n, calls] = [process.argv[2], +process.argv[3], +process.argv[4]];
  const utils = await makeWorkerUtils({ connectionString: conn });
  await utils.migrate();
  const client = new Client({ connectionString: conn });
  await client.connect();
  for (let c = 0; c < calls; c++) {
    const jobs = [];
    for (let i = 1; i <= n; i++) jobs.push({ identifier: 'noop', payload: { i } });
    let t = process.hrtime.bigint();
    await utils.addJobs(jobs);
    console.log('gw', Number(process.hrtime.bigint() - t) / 1e6);
    const tasks = [];
    for (let i = 1; i <= n; i++) tasks.push({ kind: 'noop', payload: { i } });
    t = process.hrtime.bigint();
    const r = await client.query('SELECT count(*) FROM schedq.submit_many($1::jsonb)', [JSON.stringify(tasks)]);
    if (+r.rows[0].count !== n) throw new Error('submit_many returned ' + r.rows[0].count);
    console.log('schedq', Number(process.hrtime.bigint() - t) / 1e6);
  }
  await client.end();
  await utils.release();
}
main().catch((e) => { console.error(e); process.exit(1); });
