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
 *	  Costs, with the indexes of sql/schedq--1.2.sql: the task list reads
 *	  the primary key backwards from a cursor (keyset pagination: id <
 *	  before, newest first; no OFFSET, no count); the charts (a call of
 *	  their own, which the page polls less often) read the tasks finished
 *	  in the last hour through task_finished_idx; the gates read
 *	  the live tasks of their keys through task_lock_key_idx and
 *	  task_concurrency_key_idx; the workers read the running tasks through
 *	  task_running_idx.  The queue counts read every retained task once, as
 *	  queue_stats (which schedqctl status shows) does twice.
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
 * The queues, and per minute of the last hour: tasks done, failed, and
 * the quantiles of the wait from due (run_at) to start, of the tasks that
 * finished in that minute.
 */
/*
 * The queues: what queue_stats says, but read in one pass over the tasks
 * (the view reads them twice: for its list of queues, and to count).
 */
#define OVERVIEW_SQL(T)                                                            \
	"SELECT pg_catalog.json_build_object('now', pg_catalog.now(), "                \
	"'queues', (SELECT COALESCE(pg_catalog.json_agg(pg_catalog.json_build_object(" \
	"'queue', COALESCE(c.queue, q.name), 'paused', COALESCE(q.paused, false), "    \
	"'pending', COALESCE(c.pending, 0), 'available', COALESCE(c.available, 0), "   \
	"'running', COALESCE(c.running, 0), 'done', COALESCE(c.done, 0), "             \
	"'failed', COALESCE(c.failed, 0), 'canceled', COALESCE(c.canceled, 0), "       \
	"'skipped', COALESCE(c.skipped, 0), 'oldest_available_s', "                    \
	"round(extract(epoch FROM pg_catalog.now() - c.oldest)::numeric, 1)) "         \
	"ORDER BY COALESCE(c.queue, q.name)), '[]') FROM (SELECT queue, "              \
	"count(*) FILTER (WHERE status = 'pending') AS pending, "                      \
	"count(*) FILTER (WHERE status = 'available') AS available, "                  \
	"count(*) FILTER (WHERE status = 'running') AS running, "                      \
	"count(*) FILTER (WHERE status = 'done') AS done, "                            \
	"count(*) FILTER (WHERE status = 'failed') AS failed, "                        \
	"count(*) FILTER (WHERE status = 'canceled') AS canceled, "                    \
	"count(*) FILTER (WHERE status = 'skipped') AS skipped, "                      \
	"min(run_at) FILTER (WHERE status = 'available') AS oldest "                   \
	"FROM schedq." T " GROUP BY queue) c FULL JOIN schedq.queue q "                \
	"ON q.name = c.queue))"

/*
 * Per minute of the last hour: tasks done, failed, and the quantiles of
 * the wait from due (run_at) to start, of the tasks that finished in that
 * minute (task_finished_idx).
 */
#define CHARTS_SQL(T)                                                               \
	"SELECT pg_catalog.json_build_object('minutes', (SELECT "                       \
	"pg_catalog.json_agg(pg_catalog.json_build_object("                             \
	"'t', m.m, 'done', COALESCE(f.done, 0), 'failed', COALESCE(f.failed, 0), "      \
	"'latency', f.q) ORDER BY m.m) FROM pg_catalog.generate_series("                \
	"pg_catalog.date_trunc('minute', pg_catalog.now()) - interval '59 minutes', "   \
	"pg_catalog.date_trunc('minute', pg_catalog.now()), interval '1 minute') "      \
	"AS m(m) LEFT JOIN (SELECT pg_catalog.date_trunc('minute', finished_at) AS m, " \
	"count(*) FILTER (WHERE status = 'done') AS done, "                             \
	"count(*) FILTER (WHERE status = 'failed') AS failed, "                         \
	"pg_catalog.percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY "    \
	"extract(epoch FROM GREATEST(started_at - run_at, "                             \
	"interval '0'))) FILTER (WHERE started_at IS NOT NULL) AS q "                   \
	"FROM schedq." T " WHERE status IN ('done', 'failed') AND finished_at > "       \
	"pg_catalog.date_trunc('minute', pg_catalog.now()) - interval '59 minutes' "    \
	"GROUP BY 1) f ON f.m = m.m))"

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

static const WebQuery workers_q = {
	"SELECT COALESCE(pg_catalog.json_agg(w ORDER BY w.running DESC, "
	"w.last_seen DESC NULLS LAST, w.worker), '[]') FROM (SELECT * FROM "
	"schedq.worker_status ORDER BY running DESC, last_seen DESC NULLS LAST "
	"LIMIT 200) w",
	"SELECT COALESCE(pg_catalog.json_agg(w ORDER BY w.running DESC, "
	"w.last_seen DESC NULLS LAST, w.worker), '[]') FROM (SELECT * FROM "
	"schedq.all_worker_status ORDER BY running DESC, last_seen DESC NULLS "
	"LAST LIMIT 200) w",
};

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
