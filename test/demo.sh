#!/usr/bin/env bash
# test/demo.sh -- a guided tour of schedq on a throwaway server
#
# Starts a private PostgreSQL server with schedq preloaded, then runs one
# psql script that walks through the life of tasks: submit, claim, heartbeat,
# complete, fail and retry, permanent failure, manual retry, priorities,
# budgets, paused queues, grant verification, a workflow, a periodic SQL
# task and a rate-limited queue; then schedqctl: the roles of
# docs/security.md#roles (all in one place, DEMO_ROLES), a task submitted
# and run by `schedqctl worker`, and `schedqctl status`.  Each step prints
# a short explanation, what it runs and the result.  The server and its
# data directory are removed at the end, whatever happens.
#
#   make demo                       (builds and installs first)
#   PG_CONFIG=... bash test/demo.sh (uses whatever schedq is installed)
#
# Run as root, the server and psql run as the OS user postgres.
# Exit status: 0 when every statement succeeded, non-zero otherwise.

set -euo pipefail


# The throwaway server: the same code the benchmarks use.
BENCH_NAME=demo
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench/lib.sh"
bench_check_tools initdb pg_ctl psql
bench_init
bench_start_server
as_pg "$BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -h "$TMP" -p "$PORT" -U postgres -d postgres \
	-c "CREATE DATABASE demo" >/dev/null

# ---------------------------------------------------------------------------
# The tour, one psql script.  Narration is \echo; every statement is echoed
# (ECHO queries) before its result.  pg_temp.* are helpers of this demo.
# ---------------------------------------------------------------------------
cat >"$TMP/demo.sql" <<'SQL'
\set ON_ERROR_STOP 1
\set QUIET 1
\set ECHO none

\echo
\echo '== 1. Install the extension =='
\echo '   The library is preloaded (shared_preload_libraries = ''schedq'' in'
\echo '   postgresql.conf); CREATE EXTENSION makes a database schedule tasks.'
\echo '   A scheduler background worker starts for the database by itself.'
\echo
\set ECHO queries
CREATE EXTENSION schedq;
SELECT extname, extversion FROM pg_extension WHERE extname = 'schedq';
\set ECHO none

-- Helpers of this demo, kept out of the narration.
-- from_now(ts): a timestamp shown relative to now, e.g. 'in 30.0 s'.
CREATE FUNCTION pg_temp.from_now(ts timestamptz) RETURNS text
LANGUAGE sql STABLE AS $$
	SELECT CASE
		WHEN ts IS NULL THEN NULL
		WHEN ts >= now() THEN 'in ' || round(extract(epoch FROM ts - now())::numeric, 1) || ' s'
		ELSE round(extract(epoch FROM now() - ts)::numeric, 1) || ' s ago'
	END $$;
-- wait_for(queue, status, n): wait (up to 15 s) until n tasks of the queue
-- have that status; the scheduler moves tasks in the background.
CREATE FUNCTION pg_temp.wait_for(q text, st text, n int) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1 .. 300 LOOP
		IF (SELECT count(*) FROM schedq.task WHERE queue = q AND status = st) >= n THEN
			RETURN;
		END IF;
		PERFORM pg_sleep(0.05);
	END LOOP;
	RAISE EXCEPTION 'demo: timed out waiting for % task(s) of queue % to be %', n, q, st;
END $$;
-- wait_for_scheduler(): wait (up to 10 s) for this database's scheduler.
CREATE FUNCTION pg_temp.wait_for_scheduler() RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1 .. 200 LOOP
		IF EXISTS (SELECT 1 FROM pg_stat_activity
				   WHERE backend_type = 'schedq scheduler'
				     AND datname = current_database()) THEN
			RETURN true;
		END IF;
		PERFORM pg_sleep(0.05);
	END LOOP;
	RETURN false;
END $$;
SELECT pg_temp.wait_for_scheduler() AS scheduler_up \gset
CREATE TEMP TABLE grants (id bigint, attempt int, kind text, priority int, token text);

\echo
\echo '   The background workers of schedq, as pg_stat_activity shows them:'
\set ECHO queries
SELECT backend_type, datname
  FROM pg_stat_activity
 WHERE backend_type LIKE 'schedq%'
 ORDER BY backend_type;
\set ECHO none
\if :scheduler_up
\else
\echo '   (no schedq scheduler appeared within 10 s: tasks that wait as pending will'
\echo '   not become available, and the steps that need that will fail)'
\endif

\echo
\echo '== 2. Submit a task =='
\echo '   submit(kind, payload, ...) stores a task and returns its id.  Options are'
\echo '   passed by name.  A task with a future run_at waits as pending; the others'
\echo '   are available to workers at once.  (A query ending in \\gset stores its'
\echo '   result in psql variables such as :id and :token instead of printing it.)'
\echo
\set ECHO queries
SELECT schedq.submit('send_email', payload => '{"to": "ada@example.com", "template": "welcome"}',
                     queue => 'emails') AS welcome_id;
SELECT schedq.submit('send_email', payload => '{"to": "bob@example.com", "template": "invoice"}',
                     queue => 'emails', priority => 5) AS invoice_id;
SELECT schedq.submit('send_email', payload => '{"to": "cy@example.com", "template": "reminder"}',
                     queue => 'emails', run_at => now() + interval '1 hour') AS reminder_id \gset
SELECT id, queue, kind, status, priority, pg_temp.from_now(run_at) AS run_at,
       payload->>'template' AS template
  FROM schedq.task WHERE queue = 'emails' ORDER BY id;
\set ECHO none

\echo
\echo '== 3. Claim a task as worker w1 =='
\echo '   claim(worker, ...) hands out the best available task (highest priority'
\echo '   first), marks it running under a lease and returns a grant: the token the'
\echo '   worker shows when it reports back.  The token is opaque to the worker: it'
\echo '   names the task, the attempt and the lease, signed with HMAC-SHA-256 under a'
\echo '   secret only superusers can read, so it cannot be forged or reused later.'
\echo
SELECT pg_temp.wait_for('emails', 'available', 2) AS waited \gset
\set ECHO queries
SELECT id, attempt, kind, payload, lease_expires_at, token
  FROM schedq.claim('w1', queues => '{emails}') \gset
\set ECHO none
\echo '   -> w1 got task' :id 'on attempt' :attempt 'of kind' :kind 'with payload' :payload
\echo '   -> token:' :token
\set done_token :token
\echo
\set ECHO queries
SELECT current_setting('schedq.default_lease', true) AS default_lease;
SELECT id, status, claimed_by, attempts, pg_temp.from_now(lease_expires_at) AS lease_expires
  FROM schedq.task WHERE id = :id;
\set ECHO none

\echo
\echo '== 4. Heartbeat: extend the lease =='
\echo '   A worker with a long job renews its lease; if it stops doing so and the'
\echo '   lease runs out, the reaper hands the task to another worker.'
\echo
\set ECHO queries
SELECT pg_temp.from_now(schedq.heartbeat(:'token', extend => '2 minutes')) AS new_lease_expiry;
SELECT id, status, pg_temp.from_now(lease_expires_at) AS lease_expires
  FROM schedq.task WHERE id = :id;
\set ECHO none

\echo
\echo '== 5. Complete it with a result =='
\echo
\set ECHO queries
SELECT schedq.complete(:'token', result => '{"message_id": "msg-0042"}') AS completed;
SELECT id, status, attempts, result, pg_temp.from_now(finished_at) AS finished
  FROM schedq.task WHERE id = :id;
\set ECHO none
\echo '   The grant is spent now: reporting again changes nothing and says so.'
\set ECHO queries
SELECT schedq.complete(:'token') AS completed_again;
\set ECHO none

\echo
\echo '== 6. A failure that is retried =='
\echo '   fail(token, error) records the error; while attempts remain the task goes'
\echo '   back to pending with its run_at pushed out by an exponential backoff'
\echo '   (1 s after the first attempt, doubling, +-25 % jitter).  The scheduler makes'
\echo '   it available again when it is due.'
\echo
\set ECHO queries
SELECT schedq.submit('build_report', payload => '{"month": "2024-05"}',
                     queue => 'reports', max_attempts => 3) AS report_id \gset
\set ECHO none
SELECT pg_temp.wait_for('reports', 'available', 1) AS waited \gset
\set ECHO queries
SELECT id, attempt, token FROM schedq.claim('w1', queues => '{reports}') \gset
SELECT schedq.fail(:'token', 'upstream API timed out') AS new_status;
SELECT id, status, attempts, max_attempts, last_error, pg_temp.from_now(run_at) AS run_at
  FROM schedq.task WHERE id = :report_id;
\set ECHO none
\echo
\echo '   Worker w2 waits for work: claim(wait => ...) sleeps until a task becomes'
\echo '   claimable (the server wakes it), here when the backoff is over.'
\echo
\set ECHO queries
SELECT id, attempt, token FROM schedq.claim('w2', queues => '{reports}', wait => '15 s') \gset
\set ECHO none
\echo '   -> w2 got task' :id 'on attempt' :attempt
\set ECHO queries
SELECT schedq.complete(:'token', result => '{"rows": 1234}') AS completed;
SELECT id, status, attempts, claimed_by, last_error, result
  FROM schedq.task WHERE id = :report_id;
\set ECHO none

\echo
\echo '== 7. A permanent failure =='
\echo '   Some errors will not go away by retrying.  fail(..., permanent => true)'
\echo '   fails the task for good, even with attempts left.'
\echo
\set ECHO queries
SELECT schedq.submit('charge_card', payload => '{"order": 1001, "amount": 42.50}',
                     queue => 'payments') AS charge_id \gset
\set ECHO none
SELECT pg_temp.wait_for('payments', 'available', 1) AS waited \gset
\set ECHO queries
SELECT id, attempt, token FROM schedq.claim('w1', queues => '{payments}') \gset
SELECT schedq.fail(:'token', 'card declined', permanent => true) AS new_status;
SELECT id, status, attempts, max_attempts, last_error
  FROM schedq.task WHERE id = :charge_id;
\set ECHO none
\set old_token :token

\echo
\echo '== 8. Run a finished task again with retry =='
\echo '   retry(task_id) gives a terminal task (done, failed, canceled, skipped) a'
\echo '   fresh allowance of attempts.  It returns false, changing nothing, for a'
\echo '   task that has not finished, like the pending reminder of step 2.'
\echo
\set ECHO queries
SELECT schedq.retry(:reminder_id) AS retry_pending_task;
SELECT schedq.retry(:charge_id) AS retried;
SELECT id, status, attempts, max_attempts, last_error
  FROM schedq.task WHERE id = :charge_id;
SELECT id, attempt, token FROM schedq.claim('w2', queues => '{payments}', wait => '15 s') \gset
\set ECHO none
\echo '   -> w2 got task' :id 'again, on attempt' :attempt
\echo '   Attempt numbers keep increasing, so the grant of the failed attempt is stale:'
\set ECHO queries
SELECT schedq.complete(:'old_token') AS old_grant_completes;
SELECT schedq.complete(:'token', result => '{"charged": true}') AS completed;
SELECT id, status, attempts, claimed_by, result
  FROM schedq.task WHERE id = :charge_id;
\set ECHO none

\echo
\echo '== 9. Priorities =='
\echo '   Three tasks submitted from lowest to highest priority; one claim at a time'
\echo '   returns the highest priority first (ties: earlier run_at, then lower id).'
\echo
\set ECHO queries
SELECT schedq.submit('cleanup_tmp', queue => 'ops', priority => -10) AS low,
       schedq.submit('send_digest', queue => 'ops') AS normal,
       schedq.submit('page_oncall', queue => 'ops', priority => 10) AS high;
\set ECHO none
SELECT pg_temp.wait_for('ops', 'available', 3) AS waited \gset
\set ECHO queries
INSERT INTO grants SELECT id, attempt, kind, priority, token FROM schedq.claim('w3', queues => '{ops}')
RETURNING id, kind, priority;
INSERT INTO grants SELECT id, attempt, kind, priority, token FROM schedq.claim('w3', queues => '{ops}')
RETURNING id, kind, priority;
INSERT INTO grants SELECT id, attempt, kind, priority, token FROM schedq.claim('w3', queues => '{ops}')
RETURNING id, kind, priority;
SELECT id, kind, schedq.complete(token) AS completed FROM grants ORDER BY id;
\set ECHO none
TRUNCATE grants;

\echo
\echo '== 10. Budgets =='
\echo '   A budget caps what tasks naming it may consume: claiming a task adds its'
\echo '   cost (default 1) to the budget, and a task whose cost does not fit is not'
\echo '   handed out.  Without a period the budget never refills; with a period'
\echo '   (say ''1 minute'') it is a rate limit.'
\echo
\set ECHO queries
SELECT schedq.set_budget('api', 2);
SELECT schedq.submit('call_partner_api', payload => jsonb_build_object('call', g),
                     queue => 'partner', budgets => '{api}') AS id
  FROM generate_series(1, 3) AS g;
\set ECHO none
SELECT pg_temp.wait_for('partner', 'available', 3) AS waited \gset
\set ECHO queries
INSERT INTO grants SELECT id, attempt, kind, priority, token
  FROM schedq.claim('w4', queues => '{partner}', n => 3)
RETURNING id, kind;
SELECT id, status, budgets, cost FROM schedq.task WHERE queue = 'partner' ORDER BY id;
\set ECHO none
SELECT to_regclass('schedq.budget') IS NOT NULL AS has_budget_table \gset
\if :has_budget_table
\set ECHO queries
SELECT name, hard_limit, used, period FROM schedq.budget;
\set ECHO none
\endif
\echo '   Raising the limit to 3 lets exactly one more claim through:'
\set ECHO queries
SELECT schedq.set_budget('api', 3);
INSERT INTO grants SELECT id, attempt, kind, priority, token
  FROM schedq.claim('w4', queues => '{partner}', n => 3)
RETURNING id, kind;
SELECT id, kind, schedq.complete(token) AS completed FROM grants ORDER BY id;
\set ECHO none
TRUNCATE grants;

\echo
\echo '== 11. Pause and resume a queue =='
\echo '   Nothing is claimed from a paused queue; submitting still works.'
\echo
\set ECHO queries
SELECT schedq.pause_queue('exports');
SELECT schedq.submit('nightly_export', queue => 'exports') AS export_id \gset
\set ECHO none
SELECT pg_temp.wait_for('exports', 'available', 1) AS waited \gset
\set ECHO queries
SELECT count(*) AS claimed_while_paused FROM schedq.claim('w5', queues => '{exports}');
SELECT schedq.resume_queue('exports');
SELECT id, attempt, kind, token FROM schedq.claim('w5', queues => '{exports}') \gset
\set ECHO none
\echo '   -> after resume_queue, w5 got task' :id 'of kind' :kind

\echo
\echo '== 12. Checking grants =='
\echo '   verify_grant(token) says what a token is worth without using it:'
\echo '   valid, malformed, bad_signature (tampered or forged), expired or stale.'
\echo '   First, a copy of the live grant of step 11 with one character changed:'
\echo
\set ECHO queries
SELECT overlay(tok PLACING translate(substr(tok, length(tok) - 4, 1),
                                     '0123456789abcdefABCDEF', '1234567890bcdefaBCDEFA')
               FROM length(tok) - 4 FOR 1) AS tampered
  FROM (SELECT :'token'::text AS tok) AS live \gset
SELECT 'live grant of w5'      AS token, schedq.verify_grant(:'token')      AS verdict
UNION ALL
SELECT 'same, one char changed',         schedq.verify_grant(:'tampered')
UNION ALL
SELECT 'made-up string',                 schedq.verify_grant('let-me-in')
UNION ALL
SELECT 'grant of step 5 (done)',         schedq.verify_grant(:'done_token');
\set ECHO none
\echo
\echo '   Using a forged grant is an error (SQLSTATE class 22 or 28), not a quiet'
\echo '   false.  A small function catches the error to show it:'
\set ECHO queries
CREATE FUNCTION pg_temp.try_complete(token text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	RETURN 'accepted: ' || schedq.complete(token);
EXCEPTION WHEN OTHERS THEN
	RETURN 'refused: ' || SQLERRM || ' (SQLSTATE ' || SQLSTATE || ')';
END $$;
SELECT pg_temp.try_complete(:'tampered') AS complete_with_tampered_grant;
SELECT schedq.complete(:'token') AS completed;
\set ECHO none

\echo
\echo '== 13. Cancel a task =='
\echo '   The reminder of step 2 is no longer needed.  cancel() works on any task'
\echo '   that has not finished (a running one loses its grant at once) and returns'
\echo '   false for a finished one.'
\echo
\set ECHO queries
SELECT schedq.cancel(:reminder_id) AS canceled;
SELECT schedq.cancel(:reminder_id) AS canceled_again;
SELECT id, kind, status, payload->>'template' AS template FROM schedq.task WHERE id = :reminder_id;
\set ECHO none

\echo
\echo '== 14. Watching the queues =='
SELECT to_regclass('schedq.queue_stats') IS NOT NULL AS has_queue_stats \gset
\if :has_queue_stats
\echo '   schedq.queue_stats counts tasks per queue and state:'
\echo
\set ECHO queries
SELECT * FROM schedq.queue_stats ORDER BY queue;
\set ECHO none
\else
\echo '   (schedq.queue_stats does not exist in this build; counting by hand)'
\echo
\set ECHO queries
SELECT queue, status, count(*) FROM schedq.task GROUP BY 1, 2 ORDER BY 1, 2;
\set ECHO none
\endif
SELECT to_regprocedure('schedq.metrics()') IS NOT NULL AS has_metrics \gset
\if :has_metrics
\echo
\echo '   schedq.metrics(): counters since the server started'
\echo
\set ECHO queries
SELECT name, value FROM schedq.metrics()
 WHERE name IN ('tasks_submitted', 'tasks_claimed', 'tasks_completed',
                'tasks_failed', 'tasks_retried')
 ORDER BY name;
\set ECHO none
\endif
\echo
\echo '   Every task of this tour:'
\set ECHO queries
SELECT id, queue, kind, status, priority, attempts, claimed_by, last_error
  FROM schedq.task ORDER BY id;
\set ECHO none

\echo
\echo '== 15. A workflow: fan-out, then fan-in =='
\echo '   A run groups tasks; depends_on makes a task wait for others.  Here'
\echo '   extract fans out to three transforms, and load waits for all three.'
\echo '   The scheduler promotes each task as soon as its dependencies are done;'
\echo '   the worker blocks in claim(wait => ...) until there is something to do.'
\echo
\set ECHO queries
BEGIN;
SELECT schedq.create_run('nightly-etl') AS run \gset
SELECT schedq.submit('extract', queue => 'etl', run_id => :run) AS e \gset
SELECT schedq.submit('transform_' || part, queue => 'etl', run_id => :run,
                     depends_on => ARRAY[:e]::bigint[]) AS id
  FROM unnest('{orders,customers,products}'::text[]) AS part;
SELECT schedq.submit('load', queue => 'etl', run_id => :run,
                     depends_on => (SELECT array_agg(id) FROM schedq.task
                                     WHERE run_id = :run AND kind LIKE 'transform%'));
COMMIT;
\set ECHO none
CREATE TEMP VIEW etl AS
  SELECT string_agg(kind || ':' || status, '  ' ORDER BY id) AS tasks,
         (SELECT status FROM schedq.run WHERE id = :run) AS run
    FROM schedq.task WHERE run_id = :run;
\echo '   What runs, step by step (claim waits for the scheduler to promote):'
SELECT * FROM etl;
\set ECHO queries
SELECT kind, schedq.complete(token) FROM schedq.claim('etl-worker', queues => '{etl}', n => 10, wait => '5s');
\set ECHO none
SELECT * FROM etl;
\set ECHO queries
SELECT kind, schedq.complete(token) FROM schedq.claim('etl-worker', queues => '{etl}', n => 10, wait => '5s');
\set ECHO none
SELECT * FROM etl;
\set ECHO queries
SELECT kind, schedq.complete(token) FROM schedq.claim('etl-worker', queues => '{etl}', n => 10, wait => '5s');
\set ECHO none
SELECT * FROM etl;

\echo
\echo '== 16. A periodic SQL task, run by the built-in executor as its owner =='
\echo '   Role demo_app schedules a SQL command every second.  The executor runs'
\echo '   it as demo_app, with demo_app''s privileges and no more.'
\echo
\set ECHO queries
CREATE ROLE demo_app LOGIN;
GRANT USAGE ON SCHEMA schedq TO demo_app;
GRANT EXECUTE ON FUNCTION schedq.schedule_sql, schedq.unschedule TO demo_app;
GRANT SELECT ON schedq.periodic, schedq.task TO demo_app;
CREATE TABLE public.heartbeats (at timestamptz, by_role text);
GRANT INSERT, SELECT ON public.heartbeats TO demo_app;
SET ROLE demo_app;
SELECT schedq.schedule_sql('heartbeat', '* * * * * *',
       'INSERT INTO public.heartbeats VALUES (clock_timestamp(), current_user)');
RESET ROLE;
\set ECHO none
SELECT pg_sleep(3.5) AS slept \gset
\set ECHO queries
SELECT to_char(at, 'HH24:MI:SS.MS') AS at, by_role FROM public.heartbeats ORDER BY at;
SELECT name, schedule, fired, skipped, last_run IS NOT NULL AS has_run FROM schedq.periodic;
SELECT id, status, result FROM schedq.task WHERE periodic = 'heartbeat' ORDER BY id LIMIT 3;
SET ROLE demo_app;
SELECT schedq.unschedule('heartbeat');
RESET ROLE;
\set ECHO none

\echo
\echo '== 17. A rate-limited queue =='
\echo '   A budget with a period refills at every boundary: 3 SMS per 2 seconds.'
\echo '   Eight tasks are waiting; each claim takes only what the budget allows.'
\echo
\set ECHO queries
SELECT schedq.set_budget('sms', 3, period => '2 seconds');
SELECT count(schedq.submit('send_sms', queue => 'sms', budgets => '{sms}')) AS submitted
  FROM generate_series(1, 8);
\set ECHO none
SELECT pg_temp.wait_for('sms', 'available', 8) AS waited \gset
\echo '   Claim as much as possible, in three successive periods:'
SELECT to_char(clock_timestamp(), 'HH24:MI:SS') AS at,
       (SELECT count(*) FROM schedq.claim('sms-worker', queues => '{sms}', n => 10)) AS claimed;
SELECT pg_sleep(2 - extract(epoch FROM clock_timestamp())::numeric % 2) AS slept \gset
SELECT to_char(clock_timestamp(), 'HH24:MI:SS') AS at,
       (SELECT count(*) FROM schedq.claim('sms-worker', queues => '{sms}', n => 10)) AS claimed;
SELECT pg_sleep(2 - extract(epoch FROM clock_timestamp())::numeric % 2) AS slept \gset
SELECT to_char(clock_timestamp(), 'HH24:MI:SS') AS at,
       (SELECT count(*) FROM schedq.claim('sms-worker', queues => '{sms}', n => 10)) AS claimed;
\set ECHO queries
SELECT * FROM schedq.queue_stats WHERE queue IN ('etl', 'sms') ORDER BY queue;
\set ECHO none

\echo '== Summary =='
\echo '   submit / submit_many      put tasks in a queue (priority, run_at, budgets, ...)'
\echo '   claim                     take the best available tasks under a lease -> token'
\echo '   heartbeat                 extend the lease of a long job'
\echo '   complete / fail           report back with the token; fail retries with backoff'
\echo '   retry / cancel            run a finished task again / stop one'
\echo '   pause_queue / set_budget  control what may be claimed'
\echo '   verify_grant              check a token; stale and forged ones change nothing'
\echo '   create_run / depends_on   workflows: fan-out, fan-in, failure policies'
\echo '   schedule / schedule_sql   periodic tasks (cron, systemd calendar, @every)'
\echo '   The roles to GRANT: docs/security.md; workers, schedules, workflows: docs/guide/.'
SQL

[[ ${#RUNAS[@]} -eq 0 ]] || chown postgres: "$TMP/demo.sql"

as_pg "$BINDIR/psql" -X -v ON_ERROR_STOP=1 -h "$TMP" -p "$PORT" -U postgres -d demo \
	-f "$TMP/demo.sql"

# ---------------------------------------------------------------------------
# schedqctl, as the roles of docs/security.md#roles would use it.
# ---------------------------------------------------------------------------

# The roles, all in this one place: a submitter (app) and a worker
# (worker), with the grants docs/security.md#roles gives them; the admin
# here is the demo's superuser.  Keep in step with that page.
DEMO_ROLES=$(cat <<'SQL'
CREATE ROLE app LOGIN;
GRANT USAGE ON SCHEMA schedq TO app;
GRANT EXECUTE ON FUNCTION schedq.submit, schedq.submit_many, schedq.submit_sql,
      schedq.cancel, schedq.retry, schedq.create_run, schedq.cancel_run,
      schedq.schedule, schedq.schedule_sql, schedq.unschedule,
      schedq.set_schedule_enabled, schedq.run_schedule_now, schedq.next_runs TO app;
GRANT SELECT ON schedq.task, schedq.run, schedq.periodic, schedq.queue,
      schedq.queue_stats TO app;
CREATE ROLE worker LOGIN;
GRANT USAGE ON SCHEMA schedq TO worker;
GRANT EXECUTE ON FUNCTION schedq.claim, schedq.claim_queue, schedq.heartbeat, schedq.progress,
      schedq.complete, schedq.complete_many, schedq.complete_and_claim,
      schedq.fail, schedq.verify_grant TO worker;
GRANT EXECUTE ON PROCEDURE schedq.await_task, schedq.await_queue TO worker;
SELECT schedq.grant_work('worker', 'app');   -- work on app's tasks
SQL
)

CTL=$BINDIR/schedqctl
[[ -x $CTL ]] || die "$CTL not found: schedqctl is installed with schedq (make install)"
conn() { echo "host=$TMP port=$PORT dbname=demo user=$1"; }
WORKER_PID_FILE=$TMP/worker.pid
stop_worker() {
	if [[ -s $WORKER_PID_FILE ]]; then
		kill -TERM "$(cat "$WORKER_PID_FILE")" 2>/dev/null || true
		rm -f "$WORKER_PID_FILE"
	fi
}
BENCH_CLEANUP_HOOK=stop_worker

echo
echo '== 18. schedqctl, with the roles of docs/security.md =='
echo '   schedqctl is the command-line tool: it submits, runs any program as a'
echo '   worker, and shows the queues.  Each command needs the privileges of'
echo '   one role of docs/security.md#roles: here a submitter, app, and a'
echo '   worker, worker, made as that page says:'
echo
sed 's/^/     /' <<<"$DEMO_ROLES"
as_pg "$BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -h "$TMP" -p "$PORT" -U postgres -d demo \
	-c "$DEMO_ROLES" >/dev/null
echo
echo '   app submits a task; worker runs a program for each task it claims.  The'
echo '   program reads the payload on its standard input, and what it prints (one'
echo '   JSON value) becomes the result:'
echo
cat >"$TMP/thumbnail.sh" <<'PROGRAM'
#!/bin/sh
# the payload is on standard input; what this prints is the task's result
payload=$(cat)
echo '{"thumbnail": "cat-small.png"}'
PROGRAM
chmod 755 "$TMP/thumbnail.sh"
sed 's/^/     /' "$TMP/thumbnail.sh"
echo
echo '   The worker waits for tasks without polling; here it is stopped (SIGTERM)'
echo '   once the task is done, and logs one line per task:'
echo
printf '   $ %s\n' "schedqctl submit thumbnail --queue=images --payload='{\"image\": \"cat.png\"}' -d '$(conn app)'"
task_id=$(as_pg "$CTL" submit thumbnail --queue=images --payload='{"image": "cat.png"}' -d "$(conn app)")
echo "     $task_id"
printf '   $ %s\n' "schedqctl worker --queue=images --name=demo-worker -d '$(conn worker)' -- thumbnail.sh"
as_pg sh -c 'echo $$ >"$1"; exec "$2" worker --queue=images --name=demo-worker -d "$3" -- "$4"' \
	sh "$WORKER_PID_FILE" "$CTL" "$(conn worker)" "$TMP/thumbnail.sh" 2>&1 | sed 's/^/     /' &
for _ in $(seq 1 150); do
	status=$(as_pg "$BINDIR/psql" -X -At -h "$TMP" -p "$PORT" -U postgres -d demo \
		-c "SELECT status FROM schedq.task WHERE id = $task_id")
	[[ $status == done ]] && break
	sleep 0.1
done
stop_worker
wait
[[ $status == done ]] || die "the worker did not complete task $task_id within 15 s"
echo
query="SELECT id, kind, status, claimed_by, result FROM schedq.task WHERE id = $task_id"
printf '   $ psql -c "%s"\n' "$query"
as_pg "$BINDIR/psql" -X -h "$TMP" -p "$PORT" -U postgres -d demo -c "$query" 2>&1 |
	sed 's/^/     /' 
echo '   The queues, the workers, the scheduler and the latest failures, as an'
echo '   admin sees them (schedqctl top shows the same, live):'
echo
printf '   $ %s\n' "schedqctl status --failures=3 -d '$(conn postgres)'"
as_pg "$CTL" status --failures=3 -d "$(conn postgres)" 2>&1 | sed 's/^/     /' 

echo
echo "Demo finished; stopping the server and removing $TMP."
