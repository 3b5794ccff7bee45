/*-------------------------------------------------------------------------
 * schedqctl/webapi.c
 *	  schedqctl web: the read calls of the JSON API (GET /api/NAME).
 *
 *	  Each call is one or a few fixed queries with $n parameters, run as
 *	  the signed-in role, each building its answer as JSON in the
 *	  database (json_build_object, json_agg), so that every value reaches
 *	  the browser as a JSON string or number, never as markup.  Each
 *	  query has two forms, over the role's own tables (schedq.task and
 *	  friends, which row-level security limits to the tasks it may act
 *	  for, with payloads and results) or over a monitor's all_ views
 *	  (every task, no payloads, results or dedup keys: docs/security.md).
 *	  A section the role may not read (the gates' tables, the schedulers)
 *	  answers the database's refusal in its place, and the rest still
 *	  shows.
 *
 *	  Costs, with the indexes of sql/schedq--1.2.sql: no call reads the
 *	  retained history whole.  The task list reads the primary key
 *	  backwards from a cursor (keyset pagination: id < before, newest
 *	  first; no OFFSET, no count); the overview counts the live tasks
 *	  through the partial indexes of each status and samples the finished
 *	  ones of the last hour through task_finished_idx; the charts (a call
 *	  of their own, which the page polls less often) read a bounded sample
 *	  of each minute through task_finished_idx; the gates read the live
 *	  tasks of their keys through task_lock_key_idx and
 *	  task_concurrency_key_idx; the workers read the running tasks through
 *	  task_running_idx and the newest finished through task_finished_idx; a
 *	  run's tasks are read through task_run_all_idx.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "schedqctl.h"
#include "web.h"

#define PAGE_MAX 200

/* One statement of a call, in its two forms. */
typedef struct WebQuery
{
	const char *own;
	const char *monitor;
} WebQuery;

#define Q(call, q)                                                             \
	((call)->source == WEB_SOURCE_MONITOR ? (q).monitor : (q).own)

/*
 * The queries are built by macros that nest (a table's name, samples,
 * windows), which clang-format cannot lay out: they are kept within 80
 * columns by hand.
 */
/* clang-format off */

/*
 * The queues, read through indexes only, so that the cost follows a bounded
 * part of the live tasks and a bounded sample of the finished ones, never
 * the retained history.
 *
 * Available: the queues and, per queue and priority, the oldest task, one
 * step of task_available_queue_idx each (so the oldest is exact); the
 * count per queue, exact up to LIVE_MAX (beyond, LIVE_MAX + 1 and a flag).
 * Running: task_running_idx, exact (as many as the workers hold).  Pending,
 * by the gate that holds it (pending_by), up to LIVE_MAX + 1 of each
 * (beyond, a flag): not parked, by run_at, either in the future (1,
 * time) or due, for the next promotion pass to promote or park (2, due),
 * both ranges of task_pending_idx; parked on a limit (3,
 * task_parked_concurrency_idx), on an exclusive key, which such a task
 * has (4, task_lock_key_idx), on dependencies, which only tasks of a run
 * have (5, task_run_all_idx); each queue's counts of each (pq) are
 * aggregated once.  Budgets hold back no pending task: they gate
 * claims of available ones (the gates call shows them).
 *
 * Done and failed: the tasks finished in the last hour, read newest first
 * through task_finished_idx, up to FIN_SAMPLE of each status; when there
 * are as many, the counts are those of the shorter window the newest
 * FIN_SAMPLE span (done_window_s, failed_window_s: exact, over less time).
 */
#define LIVE_MAX "10000"
#define FIN_SAMPLE "1000"
#define FIN_SAMPLE_SQL(T, STATUS, COLS)                                        \
	"SELECT " COLS " FROM schedq." T " WHERE status = '" STATUS "' AND "       \
	"finished_at > pg_catalog.now() - interval '1 hour' ORDER BY finished_at " \
	"DESC LIMIT " FIN_SAMPLE
/* the window of a sample of the hour, in seconds */
#define FIN_WINDOW(CTE)                                                        \
	"(SELECT CASE WHEN count(*) >= " FIN_SAMPLE " THEN round(extract(epoch "   \
	"FROM pg_catalog.now() - min(finished_at))::numeric, 1) ELSE 3600 END "    \
	"FROM " CTE ")"
#define PEND_SQL(T, KIND, WHERE)                                               \
	"(SELECT " KIND " AS k, queue FROM schedq." T " WHERE status = 'pending' " \
	WHERE " LIMIT " LIVE_MAX " + 1)"
#define AVAIL_HEAD_SQL(T, AFTER)                                               \
	"SELECT queue, -(priority::bigint) AS np, run_at FROM schedq." T           \
	" WHERE status = 'available' " AFTER " ORDER BY queue, "                   \
	"-(priority::bigint), run_at, id LIMIT 1"
#define OVERVIEW_CTES(T)                                                       \
	"WITH RECURSIVE qp AS (("                                                  \
	AVAIL_HEAD_SQL(T, "")                                                      \
	") UNION ALL SELECT x.* FROM qp CROSS JOIN LATERAL ("                      \
	AVAIL_HEAD_SQL(T, "AND (queue, -(priority::bigint)) > (qp.queue, qp.np)")  \
	") x), avail AS (SELECT a.queue, c.n, a.oldest FROM (SELECT queue, "       \
	"min(run_at) AS oldest FROM qp GROUP BY queue) a CROSS JOIN LATERAL ("     \
	"SELECT count(*) AS n FROM (SELECT FROM schedq." T " t WHERE "             \
	"t.status = 'available' AND t.queue = a.queue LIMIT " LIVE_MAX " + 1) "    \
	"s) c), pend AS ("                                                         \
	PEND_SQL(T, "1", "AND NOT parked AND run_at > pg_catalog.now()")           \
	" UNION ALL "                                                              \
	PEND_SQL(T, "2", "AND NOT parked AND run_at <= pg_catalog.now()")          \
	" UNION ALL "                                                              \
	PEND_SQL(T, "3", "AND parked AND parked_on = 'limit'")                     \
	" UNION ALL "                                                              \
	PEND_SQL(T, "4", "AND parked AND parked_on = 'lock' "                      \
			 "AND lock_key IS NOT NULL")                                       \
	" UNION ALL "                                                              \
	PEND_SQL(T, "5", "AND parked AND parked_on = 'deps' "                      \
			 "AND run_id IS NOT NULL")                                         \
	"), pq AS (SELECT queue, count(*) AS n, count(*) FILTER (WHERE k = 1) "    \
	"AS tm, count(*) FILTER (WHERE k = 2) AS due, count(*) FILTER (WHERE "     \
	"k = 3) AS lim, count(*) FILTER (WHERE k = 4) AS lk, count(*) FILTER "     \
	"(WHERE k = 5) AS deps FROM pend GROUP BY queue), run AS (SELECT "         \
	"queue, count(*) AS n FROM schedq." T " WHERE status = 'running' GROUP "   \
	"BY queue), d AS ("                                                        \
	FIN_SAMPLE_SQL(T, "done", "queue, finished_at")                            \
	"), f AS ("                                                                \
	FIN_SAMPLE_SQL(T, "failed", "queue, finished_at")                          \
	"), fin AS (SELECT queue, 'done' AS status, count(*) AS n FROM d GROUP "   \
	"BY queue UNION ALL SELECT queue, 'failed', count(*) FROM f GROUP BY "     \
	"queue) "
#define OVERVIEW_SQL(T)                                                        \
	OVERVIEW_CTES(T)                                                           \
	"SELECT pg_catalog.json_build_object('now', pg_catalog.now(), "            \
	"'done_window_s', "                                                        \
	FIN_WINDOW("d")                                                            \
	", 'failed_window_s', "                                                    \
	FIN_WINDOW("f")                                                            \
	", 'queues', "                                                             \
	"(SELECT COALESCE(pg_catalog.json_agg(pg_catalog.json_build_object("       \
	"'queue', n.queue, 'paused', COALESCE(q.paused, false), "                  \
	"'pending', COALESCE(p.n, 0), 'pending_by', pg_catalog.json_build_object(" \
	"'time', COALESCE(p.tm, 0), 'due', COALESCE(p.due, 0), 'lock', "           \
	"COALESCE(p.lk, 0), 'limit', COALESCE(p.lim, 0), 'deps', "                 \
	"COALESCE(p.deps, 0)), 'pending_more', (SELECT COALESCE(GREATEST("         \
	"sum(tm), sum(due), sum(lim), sum(lk), sum(deps)) > " LIVE_MAX ", false) " \
	"FROM pq), 'available', LEAST(COALESCE(a.n, 0), " LIVE_MAX "), "           \
	"'available_more', COALESCE(a.n > " LIVE_MAX ", false), "                  \
	"'running', COALESCE(r.n, 0), 'done', COALESCE(z.done, 0), "               \
	"'failed', COALESCE(z.failed, 0), 'oldest_available_s', "                  \
	"round(extract(epoch FROM pg_catalog.now() - a.oldest)::numeric, 1)) "     \
	"ORDER BY n.queue), '[]') FROM (SELECT queue FROM avail UNION "            \
	"SELECT queue FROM pq UNION SELECT queue FROM run UNION "                  \
	"SELECT queue FROM fin UNION SELECT name FROM schedq.queue) n "            \
	"LEFT JOIN avail a ON a.queue = n.queue "                                  \
	"LEFT JOIN pq p ON p.queue = n.queue "                                     \
	"LEFT JOIN run r ON r.queue = n.queue "                                    \
	"LEFT JOIN (SELECT queue, sum(n) FILTER (WHERE status = 'done') AS done, " \
	"sum(n) FILTER (WHERE status = 'failed') AS failed FROM fin "              \
	"GROUP BY queue) z ON z.queue = n.queue "                                  \
	"LEFT JOIN schedq.queue q ON q.name = n.queue))"

/*
 * Per minute of the last hour: tasks done, failed, and the quantiles of
 * the wait from due (run_at) to start, of the tasks that finished in that
 * minute, each minute read through task_finished_idx.  A minute is read up
 * to MINUTE_SAMPLE tasks of each status: when more finished in it, its
 * count is estimated from the time the first MINUTE_SAMPLE span.  The
 * quantiles are of the minute's first tasks, LATENCY_SAMPLE of the status
 * that has more and as large a share of the other (a minute of 8,000 done
 * and 80 failed: 100 done, 1 failed), so that the sample stands for the
 * minute and reads few rows of the rarer status, scattered in the table.
 */
#define MINUTE_SAMPLE  "500"
#define LATENCY_SAMPLE "100"
#define MINUTE_RANGE                                                           \
	"finished_at >= m.m AND finished_at < m.m + interval '1 minute'"
#define MINUTE_COUNT_SQL(T, STATUS)                                            \
	"CROSS JOIN LATERAL (SELECT CASE WHEN count(*) <= " MINUTE_SAMPLE          \
	" THEN count(*) ELSE round(" MINUTE_SAMPLE " * 60 / GREATEST(extract("     \
	"epoch FROM max(s.finished_at) - m.m), 0.001)) END AS n, "                 \
	"count(*) > " MINUTE_SAMPLE " AS est FROM (SELECT finished_at FROM "       \
	"schedq." T " WHERE status = '" STATUS "' AND " MINUTE_RANGE               \
	" ORDER BY finished_at LIMIT " MINUTE_SAMPLE " + 1) s) "
#define MINUTE_LATENCY_SQL(T, STATUS, N)                                       \
	"(SELECT started_at, run_at FROM schedq." T " WHERE status = '" STATUS     \
	"' AND " MINUTE_RANGE " AND started_at IS NOT NULL ORDER BY finished_at "  \
	"LIMIT ceil(" LATENCY_SAMPLE " * " N " / GREATEST(d.n, f.n, 1)))"
#define CHARTS_SQL(T)                                                          \
	"SELECT pg_catalog.json_build_object('minutes', pg_catalog.json_agg("      \
	"pg_catalog.json_build_object('t', m.m, 'done', d.n, 'failed', f.n, "      \
	"'estimated', d.est OR f.est, 'latency', l.q) ORDER BY m.m)) "             \
	"FROM pg_catalog.generate_series(pg_catalog.date_trunc('minute', "         \
	"pg_catalog.now()) - interval '59 minutes', pg_catalog.date_trunc("        \
	"'minute', pg_catalog.now()), interval '1 minute') AS m(m) "               \
	MINUTE_COUNT_SQL(T, "done")                                                \
	"d "                                                                       \
	MINUTE_COUNT_SQL(T, "failed")                                              \
	"f CROSS JOIN LATERAL (SELECT pg_catalog.percentile_cont(ARRAY[0.5, "      \
	"0.95, 0.99]) WITHIN GROUP (ORDER BY extract(epoch FROM GREATEST("         \
	"s.started_at - s.run_at, interval '0'))) AS q FROM ("                     \
	MINUTE_LATENCY_SQL(T, "done", "d.n")                                       \
	" UNION ALL "                                                              \
	MINUTE_LATENCY_SQL(T, "failed", "f.n")                                     \
	") s) l"

/* clang-format on */

static const WebQuery overview_q = {
	OVERVIEW_SQL("task"),
	OVERVIEW_SQL("all_tasks"),
};

static const WebQuery charts_q = {
	CHARTS_SQL("task"),
	CHARTS_SQL("all_tasks"),
};

static const char *const scheduler_sql =
	"SELECT COALESCE(pg_catalog.json_agg(s ORDER BY s.datname), '[]') "
	"FROM schedq.scheduler_status() s";

/* The columns of a task in a list. */
#define TASK_LIST_COLUMNS                                                      \
	"id, queue, kind, status, owner::text AS owner, priority, attempts, "      \
	"max_attempts, run_at, created_at, started_at, finished_at, claimed_by, "  \
	"run_id, pg_catalog.left(last_error, 200) AS last_error"

#define TASK_LIST_SQL(T, EXTRA)                                                     \
	"SELECT pg_catalog.json_build_object('tasks', COALESCE(pg_catalog.json_agg("    \
	"x ORDER BY x.id DESC), '[]')) FROM (SELECT " TASK_LIST_COLUMNS                 \
	" FROM schedq." T " WHERE ($1::bigint IS NULL OR id < $1::bigint) "             \
	"AND ($2::text IS NULL OR queue = $2) "                                         \
	"AND ($3::text IS NULL OR status = ANY (pg_catalog.string_to_array($3, ','))) " \
	"AND ($4::text IS NULL OR kind = $4) "                                          \
	"AND ($5::text IS NULL OR owner::text = $5) "                                   \
	"AND ($6::timestamptz IS NULL OR created_at >= $6::timestamptz) "               \
	"AND ($7::timestamptz IS NULL OR created_at < $7::timestamptz) "                \
	"AND ($8::bigint IS NULL OR id = $8::bigint) " EXTRA                            \
	"ORDER BY id DESC LIMIT $9::integer) x"

static const WebQuery tasks_q = {
	TASK_LIST_SQL("task", "AND ($10::text IS NULL OR dedup_key = $10) "),
	TASK_LIST_SQL("all_tasks", "AND $10::text IS NULL "),
};

static const WebQuery task_q = {
	"SELECT pg_catalog.row_to_json(t) FROM (SELECT id, queue, kind, status, "
	"owner::text AS owner, priority, run_at, attempts, max_attempts, "
	"retry_base, timeout::text AS timeout, lock_key, version, "
	"concurrency_key, required_caps, budgets, cost, run_id, depends_on, "
	"dedup_key, claimed_by, lease::text AS lease, lease_expires_at, deadline, "
	"parked, parked_on, periodic, last_error, created_at, started_at, "
	"finished_at, progress, progress_note, progress_at, payload, result "
	"FROM schedq.task WHERE id = $1::bigint) t",
	"SELECT pg_catalog.row_to_json(t) FROM (SELECT id, queue, kind, status, "
	"owner::text AS owner, priority, run_at, attempts, max_attempts, "
	"timeout::text AS timeout, lock_key, version, concurrency_key, "
	"required_caps, budgets, cost, run_id, depends_on, claimed_by, "
	"lease_expires_at, deadline, parked, parked_on, periodic, last_error, "
	"created_at, started_at, finished_at, progress, progress_note, "
	"progress_at FROM schedq.all_tasks WHERE id = $1::bigint) t",
};

/*
 * Runs: the role's own (schedq.run), newest first from a cursor; a
 * monitor has no run table and sees the runs that have live tasks.
 */
static const WebQuery runs_q = {
	"SELECT pg_catalog.json_build_object('runs', COALESCE(pg_catalog.json_agg(r "
	"ORDER BY r.id DESC), '[]')) FROM (SELECT id, name, status, failure_policy, "
	"owner::text AS owner, created_at, finished_at FROM schedq.run "
	"WHERE ($1::bigint IS NULL OR id < $1::bigint) ORDER BY id DESC "
	"LIMIT $2::integer) r",
	"SELECT pg_catalog.json_build_object('runs', COALESCE(pg_catalog.json_agg(r "
	"ORDER BY r.id DESC), '[]')) FROM (SELECT DISTINCT run_id AS id, "
	"NULL::text AS name, 'running' AS status FROM schedq.all_tasks "
	"WHERE run_id IS NOT NULL AND status IN ('pending', 'available', 'running') "
	"AND ($1::bigint IS NULL OR run_id < $1::bigint) ORDER BY 1 DESC "
	"LIMIT $2::integer) r",
};

/*
 * A run's first RUN_TASKS_MAX tasks, and one more to tell the page there
 * are more (it draws RUN_TASKS_MAX and says so).
 */
#define RUN_TASKS_SQL(T)                                                          \
	"SELECT COALESCE(pg_catalog.json_agg(pg_catalog.json_build_object('id', id, " \
	"'kind', kind, 'status', status, 'depends_on', depends_on, 'attempts', "      \
	"attempts, 'progress', progress, 'last_error', "                              \
	"pg_catalog.left(last_error, 200)) ORDER BY id), '[]') FROM (SELECT * "       \
	"FROM schedq." T " WHERE run_id = $1::bigint ORDER BY id LIMIT 501) t"

static const WebQuery run_tasks_q = {
	RUN_TASKS_SQL("task"),
	RUN_TASKS_SQL("all_tasks"),
};

static const char *const run_sql =
	"SELECT pg_catalog.row_to_json(r) FROM (SELECT id, name, status, "
	"failure_policy, owner::text AS owner, had_failure, created_at, "
	"finished_at FROM schedq.run WHERE id = $1::bigint) r";

static const WebQuery schedules_q = {
	"SELECT COALESCE(pg_catalog.json_agg(s ORDER BY s.name), '[]') FROM "
	"(SELECT name, schedule, timezone, enabled, next_run, last_run, "
	"last_task_id, kind, queue, owner::text AS owner, fired, skipped, "
	"last_error FROM schedq.periodic) s",
	"SELECT COALESCE(pg_catalog.json_agg(s ORDER BY s.name), '[]') FROM "
	"(SELECT name, schedule, timezone, enabled, next_run, last_run, "
	"last_task_id, kind, queue, owner::text AS owner, fired, skipped, "
	"last_error FROM schedq.all_schedules) s",
};

/* Exclusive keys with live tasks: held (available or running), waiting. */
#define LOCKS_SQL(T)                                                           \
	"SELECT COALESCE(pg_catalog.json_agg(k ORDER BY k.lock_key), '[]') FROM "  \
	"(SELECT lock_key, count(*) FILTER (WHERE status <> 'pending') AS held, "  \
	"min(id) FILTER (WHERE status <> 'pending') AS holder, "                   \
	"count(*) FILTER (WHERE status = 'pending') AS waiting FROM schedq." T     \
	" WHERE lock_key IS NOT NULL AND status IN ('pending', 'available', "      \
	"'running') GROUP BY lock_key ORDER BY lock_key LIMIT 500) k"

#define LIMITS_SQL(T)                                                          \
	"SELECT COALESCE(pg_catalog.json_agg(k ORDER BY k.key), '[]') FROM "       \
	"(SELECT l.key, l.max_active, (SELECT count(*) FROM schedq." T " t "       \
	"WHERE t.concurrency_key = l.key AND t.status IN ('available', "           \
	"'running')) AS active, (SELECT count(*) FROM schedq." T " t "             \
	"WHERE t.concurrency_key = l.key AND t.status = 'pending' AND t.parked "   \
	"AND t.parked_on = 'limit') AS waiting FROM schedq.concurrency_limit l "   \
	"ORDER BY l.key LIMIT 500) k"

static const WebQuery locks_q = { LOCKS_SQL("task"), LOCKS_SQL("all_tasks") };
static const WebQuery limits_q = { LIMITS_SQL("task"),
								   LIMITS_SQL("all_tasks") };

static const char *const budgets_sql =
	"SELECT COALESCE(pg_catalog.json_agg(b ORDER BY b.name), '[]') FROM "
	"(SELECT name, hard_limit, period::text AS period, used, period_start "
	"FROM schedq.budget ORDER BY name LIMIT 500) b";

/* clang-format off */
/*
 * Workers: those holding a running task (task_running_idx), and those that
 * finished one of the newest FIN_SAMPLE done and FIN_SAMPLE failed tasks of
 * the last hour (task_finished_idx); with their running tasks, how many of
 * that sample they finished, and their last claim among these tasks.
 */
#define WORKERS_SQL(T)                                                         \
	"SELECT COALESCE(pg_catalog.json_agg(w ORDER BY w.running DESC, "          \
	"w.last_seen DESC NULLS LAST, w.worker), '[]') FROM (SELECT claimed_by "   \
	"AS worker, count(*) FILTER (WHERE s.running) AS running, "                \
	"count(*) FILTER (WHERE NOT s.running) AS recent, "                        \
	"max(started_at) AS last_seen FROM (SELECT claimed_by, started_at, "       \
	"true AS running FROM schedq." T " WHERE status = 'running' "              \
	"UNION ALL ("                                                              \
	FIN_SAMPLE_SQL(T, "done", "claimed_by, started_at, false")                 \
	") UNION ALL ("                                                            \
	FIN_SAMPLE_SQL(T, "failed", "claimed_by, started_at, false")               \
	")) s WHERE claimed_by IS NOT NULL GROUP BY claimed_by "                   \
	"ORDER BY running DESC, last_seen DESC NULLS LAST LIMIT 200) w"

/* clang-format on */

static const WebQuery workers_q = { WORKERS_SQL("task"),
									WORKERS_SQL("all_tasks") };

#define RUNNING_SQL(T)                                                           \
	"SELECT COALESCE(pg_catalog.json_agg(r ORDER BY r.lease_expires_at, r.id), " \
	"'[]') FROM (SELECT id, queue, kind, claimed_by, attempts, started_at, "     \
	"lease_expires_at, deadline, progress, "                                     \
	"pg_catalog.left(progress_note, 200) AS progress_note FROM schedq." T        \
	" WHERE status = 'running' ORDER BY lease_expires_at, id LIMIT 500) r"

static const WebQuery running_q = { RUNNING_SQL("task"),
									RUNNING_SQL("all_tasks") };

/*
 * Append "name": the JSON of a query, or {"error": ...} when the role may
 * not run it; the answer stays 200.
 */
static void
section(WebCall *call, PQExpBuffer out, const char *name, const char *sql,
		int nparams, const char *const *values)
{
	appendPQExpBuffer(out, "%s\"%s\":", out->len > 1 ? "," : "", name);
	/* the answer, or the refusal in its place */
	(void) ctl_web_query_json(call, sql, nparams, values);
	appendPQExpBufferStr(out, call->out->data);
	resetPQExpBuffer(call->out);
}

/* Start an answer made of sections; end it with sections_end. */
static PQExpBuffer
sections_start(void)
{
	PQExpBuffer out = createPQExpBuffer();

	appendPQExpBufferChar(out, '{');
	return out;
}

static void
sections_end(WebCall *call, PQExpBuffer out)
{
	appendPQExpBufferChar(out, '}');
	resetPQExpBuffer(call->out);
	appendPQExpBufferStr(call->out, out->data);
	call->status = 200;
	destroyPQExpBuffer(out);
}

/* An id argument: digits only, else a 400 answer. */
static bool
id_arg(WebCall *call, const char *name, const char **value, bool required)
{
	const char *v = call->arg(call, name);

	*value = v;
	if (v == NULL && !required)
		return true;
	if (v == NULL || strlen(v) > 19 || strspn(v, "0123456789") != strlen(v))
	{
		char *msg = psprintf("\"%s\" must be a task id (digits)", name);

		ctl_web_json_error(call, 400, msg, "22023");
		pg_free(msg);
		return false;
	}
	return true;
}

static void
api_overview(WebCall *call)
{
	PQExpBuffer out = sections_start();

	section(call, out, "overview", Q(call, overview_q), 0, NULL);
	section(call, out, "schedulers", scheduler_sql, 0, NULL);
	sections_end(call, out);
}

/*
 * GET /api/tasks: filters queue, status (a comma list), kind, owner, since,
 * until, id, dedup (own tables only), limit (1 to PAGE_MAX, 50), and the
 * cursor before (the last id of the previous page).  One more row than
 * asked says whether there is a next page.
 */
static void
api_charts(WebCall *call)
{
	ctl_web_query_json(call, Q(call, charts_q), 0, NULL);
}

static void
api_tasks(WebCall *call)
{
	const char *values[10];
	const char *limit = call->arg(call, "limit");
	long		n = limit ? strtol(limit, NULL, 10) : 50;
	char		nbuf[16];

	if (n < 1 || n > PAGE_MAX)
	{
		ctl_web_json_error(call, 400, "limit must be 1 to 200", "22023");
		return;
	}
	snprintf(nbuf, sizeof(nbuf), "%ld", n + 1);
	if (!id_arg(call, "before", &values[0], false) ||
		!id_arg(call, "id", &values[7], false))
		return;
	values[1] = call->arg(call, "queue");
	values[2] = call->arg(call, "status");
	values[3] = call->arg(call, "kind");
	values[4] = call->arg(call, "owner");
	values[5] = call->arg(call, "since");
	values[6] = call->arg(call, "until");
	values[8] = nbuf;
	values[9] = call->arg(call, "dedup");
	if (values[9] != NULL && call->source == WEB_SOURCE_MONITOR)
	{
		ctl_web_json_error(call, 403,
						   "dedup keys are not in the monitor's views", NULL);
		return;
	}
	ctl_web_query_json(call, Q(call, tasks_q), 10, values);
}

static void
api_task(WebCall *call)
{
	const char *id;

	if (id_arg(call, "id", &id, true) &&
		ctl_web_query_json(call, Q(call, task_q), 1, &id) &&
		strcmp(call->out->data, "null") == 0)
		ctl_web_json_error(call, 404,
						   "no such task (or not one this role may see)", NULL);
}

static void
api_runs(WebCall *call)
{
	const char *values[2];

	if (!id_arg(call, "before", &values[0], false))
		return;
	values[1] = "50";
	ctl_web_query_json(call, Q(call, runs_q), 2, values);
}

static void
api_run(WebCall *call)
{
	const char *id;
	PQExpBuffer out;

	if (!id_arg(call, "id", &id, true))
		return;
	out = sections_start();
	if (call->source == WEB_SOURCE_OWN)
		section(call, out, "run", run_sql, 1, &id);
	section(call, out, "tasks", Q(call, run_tasks_q), 1, &id);
	sections_end(call, out);
}

static void
api_schedules(WebCall *call)
{
	ctl_web_query_json(call, Q(call, schedules_q), 0, NULL);
}

static void
api_gates(WebCall *call)
{
	PQExpBuffer out = sections_start();

	section(call, out, "locks", Q(call, locks_q), 0, NULL);
	section(call, out, "limits", Q(call, limits_q), 0, NULL);
	section(call, out, "budgets", budgets_sql, 0, NULL);
	sections_end(call, out);
}

static void
api_workers(WebCall *call)
{
	PQExpBuffer out = sections_start();

	section(call, out, "workers", Q(call, workers_q), 0, NULL);
	section(call, out, "running", Q(call, running_q), 0, NULL);
	sections_end(call, out);
}

/* Run the read call NAME; false when there is none. */
bool
ctl_webapi_dispatch(const char *name, WebCall *call)
{
	static const struct
	{
		const char *name;
		void (*run)(WebCall *call);
	} calls[] = {
		{ "overview", api_overview },	{ "charts", api_charts },
		{ "tasks", api_tasks },			{ "task", api_task },
		{ "runs", api_runs },			{ "run", api_run },
		{ "schedules", api_schedules }, { "gates", api_gates },
		{ "workers", api_workers },
	};

	for (size_t i = 0; i < lengthof(calls); i++)
		if (strcmp(calls[i].name, name) == 0)
		{
			calls[i].run(call);
			return true;
		}
	return false;
}
