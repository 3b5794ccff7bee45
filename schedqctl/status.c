/*-------------------------------------------------------------------------
 * schedqctl/status.c
 *	  schedqctl status: the queues, workers, schedulers and failures.
 *
 *	  status prints them as readable tables: the queues, the workers, the
 *	  running tasks and their progress, the scheduler of each database and
 *	  the latest failures.
 *
 *	  Everything comes from schedq's observability views and functions
 *	  plus reads of the tasks (done in the last minute, running, the latest
 *	  failures): a monitor's all_ views when the role may read them (every
 *	  role's rows, no data; docs/security.md#roles), else the role's own,
 *	  which show what its row-level security lets it see.  It checks every
 *	  privilege the tables need before it prints anything (privs.c): it
 *	  prints all of them, or fails with the exact GRANTs the role lacks.
 *
 *	  The workers are those running a task now or with a claim in the last
 *	  ten minutes; the title says how many older ones it hides
 *	  (--all-workers shows them).  schedq knows its workers only from the
 *	  claimed_by of the retained tasks, so a worker idle for longer is
 *	  hidden too.
 *
 *	  The tables are psql's (table.c), each under its title.  They are
 *	  rendered into a buffer, so that top (top.c) draws the same ones,
 *	  fitted to its screen.  A failure's error is cut to 60 characters,
 *	  ending in '~', by the query.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "common/logging.h"
#include "fe_utils/option_utils.h"
#include "getopt_long.h"
#include "schedqctl.h"

/*
 * The queries, with what each shows, over the views of a source (V, the
 * prefix of the queue and worker views, T the tasks): the role's own
 * (queue_stats, worker_status, task) or the monitor's (all_...).
 * In top, whose tables are fitted to the screen, the queue table's longer
 * headers are shorter.
 */
#define QUEUE_SQL(V, T, available, canceled, oldest)                           \
	"SELECT s.queue, CASE WHEN s.paused THEN 'yes' ELSE '' END AS paused, "    \
	"s.pending, s.available AS \"" available "\", s.running, s.done, "         \
	"s.failed, s.canceled + s.skipped AS \"" canceled "\", "                   \
	"COALESCE(round(extract(epoch FROM s.oldest_available_age)::numeric, 1)"   \
	"::text || 's', '') AS \"" oldest "\", "                                   \
	"(SELECT count(*) FROM schedq." T " t WHERE t.queue = s.queue "            \
	"AND t.status = 'done' AND t.finished_at > pg_catalog.now() - "            \
	"interval '1 minute') AS \"done/min\" "                                    \
	"FROM schedq." V "queue_stats s ORDER BY s.queue"

/*
 * The workers shown: with $1 false, those seen in the last WORKER_WINDOW
 * (running a task now, or with a claim in that time); with $1 true, all;
 * at most WORKER_LIMIT.
 */
#define WORKER_WINDOW "10 minutes"
#define WORKER_LIMIT  20
#define WORKER_SHOWN                                                           \
	"($1::boolean OR running > 0 OR last_seen > pg_catalog.now() - "           \
	"interval '" WORKER_WINDOW "')"

#define WORKER_SQL(V)                                                           \
	"SELECT worker, running, claims, "                                          \
	"pg_catalog.to_char(last_seen, 'YYYY-MM-DD HH24:MI:SS') AS \"last claim\" " \
	"FROM schedq." V "worker_status WHERE " WORKER_SHOWN " "                    \
	"ORDER BY running DESC, last_seen DESC NULLS LAST, worker LIMIT 20"

#define WORKER_COUNT_SQL(V)                                                    \
	"SELECT count(*) FILTER (WHERE " WORKER_SHOWN "), "                        \
	"count(*) FILTER (WHERE NOT " WORKER_SHOWN ") FROM schedq." V              \
	"worker_status"

/*
 * The running tasks, the longest running first, with how far each says it
 * has come (progress()); a note is cut to 40 characters, ending in '~'.
 */
#define RUNNING_LIMIT "10"
#define RUNNING_SQL(T)                                                                            \
	"SELECT id, queue, kind, claimed_by AS worker, "                                              \
	"pg_catalog.to_char(started_at, 'YYYY-MM-DD HH24:MI:SS') AS started, "                        \
	"COALESCE(pg_catalog.trim_scale(round(progress::numeric, 1))::text || '%', '') AS progress, " \
	"COALESCE(CASE WHEN pg_catalog.length(n) > 40 THEN "                                          \
	"pg_catalog.left(n, 39) || '~' ELSE n END, '') AS note "                                      \
	"FROM schedq." T ", LATERAL (VALUES (pg_catalog.regexp_replace("                              \
	"pg_catalog.left(progress_note, 100), '\\s+', ' ', 'g'))) AS x(n) "                           \
	"WHERE status = 'running' ORDER BY started_at, id LIMIT " RUNNING_LIMIT

#define FAILURE_SQL(T)                                                         \
	"SELECT id, queue, kind, attempts, "                                       \
	"pg_catalog.to_char(finished_at, 'YYYY-MM-DD HH24:MI:SS') AS finished, "   \
	"CASE WHEN pg_catalog.length(e) > 60 THEN pg_catalog.left(e, 59) || '~' "  \
	"ELSE e END AS error "                                                     \
	"FROM schedq." T ", LATERAL (VALUES (pg_catalog.regexp_replace("           \
	"pg_catalog.left(last_error, 200), '\\s+', ' ', 'g'))) AS x(e) "           \
	"WHERE status = 'failed' "                                                 \
	"ORDER BY finished_at DESC LIMIT $1::integer"

/*
 * Where status reads from: the role's own views, which row-level security
 * limits to its tasks, or a monitor's all_ views (docs/security.md#roles),
 * every role's tasks without their data.
 */
typedef struct StatusSource
{
	CtlNeeds	needs;
	const char *queue_sql;
	const char *queue_sql_fitted;
	const char *worker_sql;
	const char *worker_count_sql;
	const char *running_sql;
	const char *failure_sql;
} StatusSource;

static const StatusSource own_source = {
	{ CTL_ROLE_READER,
	  { "s:schedq", "t:task", "t:queue", "t:queue_stats", "t:worker_status",
		"f:scheduler_status", NULL } },
	QUEUE_SQL("", "task", "available", "canceled", "oldest available"),
	QUEUE_SQL("", "task", "avail", "cancel", "oldest"),
	WORKER_SQL(""),
	WORKER_COUNT_SQL(""),
	RUNNING_SQL("task"),
	FAILURE_SQL("task"),
};

static const StatusSource monitor_source = {
	{ CTL_ROLE_READER,
	  { "s:schedq", "t:all_tasks", "t:all_queue_stats", "t:all_worker_status",
		"f:scheduler_status", NULL } },
	QUEUE_SQL("all_", "all_tasks", "available", "canceled", "oldest available"),
	QUEUE_SQL("all_", "all_tasks", "avail", "cancel", "oldest"),
	WORKER_SQL("all_"),
	WORKER_COUNT_SQL("all_"),
	RUNNING_SQL("all_tasks"),
	FAILURE_SQL("all_tasks"),
};

static const char *const scheduler_sql =
	"SELECT datname AS database, pid, state, "
	"pg_catalog.to_char(last_tick, 'YYYY-MM-DD HH24:MI:SS') AS \"last tick\", "
	"sql_workers AS \"sql workers\", sql_workers_wanted AS wanted "
	"FROM schedq.scheduler_status() ORDER BY datname";

/*
 * The monitor's views when the role may read all three, else the role's
 * own (whose missing GRANTs a refusal then names: a role that may read
 * neither is told the narrower set).
 */
static const StatusSource *
status_source(PGconn *conn)
{
	PGresult *res =
		PQexec(conn,
			   "SELECT count(*) = 3 FROM pg_catalog.pg_class c "
			   "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
			   "WHERE n.nspname = 'schedq' AND c.relname IN ('all_tasks', "
			   "'all_queue_stats', 'all_worker_status') "
			   "AND pg_catalog.has_schema_privilege(n.oid, 'USAGE') "
			   "AND pg_catalog.has_table_privilege(c.oid, 'SELECT')");
	bool monitor = PQresultStatus(res) == PGRES_TUPLES_OK &&
				   PQntuples(res) == 1 &&
				   strcmp(PQgetvalue(res, 0, 0), "t") == 0;

	PQclear(res);
	return monitor ? &monitor_source : &own_source;
}

/*
 * Before status or top prints anything: EXIT_OK when the role may read
 * everything of one source, else what ctl_privs_require says.
 */
int
ctl_status_require(PGconn *conn, const char *what)
{
	return ctl_privs_require(conn, &status_source(conn)->needs, what);
}

/*
 * The title of the workers' table into title: which workers it shows, and
 * how many it leaves out.  Returns the exit code of the count's query.
 */
static int
status_worker_title(PGconn *conn, const StatusSource *source, bool all,
					PQExpBuffer title)
{
	const char *values[1] = { all ? "true" : "false" };
	PGresult   *res = PQexecParams(conn, source->worker_count_sql, 1, NULL,
								   values, NULL, NULL, 0);
	int			rc = ctl_conn_check(conn, res, &source->needs, "status");
	long		shown;
	long		hidden;

	if (rc != EXIT_OK)
	{
		PQclear(res);
		return rc;
	}
	shown = atol(PQgetvalue(res, 0, 0));
	hidden = atol(PQgetvalue(res, 0, 1));
	PQclear(res);
	if (all)
		appendPQExpBufferStr(title, "Workers (all, from the retained tasks");
	else
		appendPQExpBufferStr(title, "Workers (seen in the last " WORKER_WINDOW);
	if (shown > WORKER_LIMIT)
		appendPQExpBuffer(title, "; the latest %d of %ld", WORKER_LIMIT, shown);
	if (hidden > 0)
		appendPQExpBuffer(title, "; %ld older hidden: --all-workers", hidden);
	appendPQExpBufferChar(title, ')');
	ctl_text_check(title);
	return EXIT_OK;
}

/*
 * Render every section of status into out: psql's tables, or tables
 * fitted to width columns when width > 0 (top).  The callers have checked
 * the privileges (ctl_privs_require).  Returns the exit code; on an error,
 * out holds what rendered before it.  If queues is not NULL it receives
 * the queue result (the caller clears it).
 */
int
ctl_status_render(PGconn *conn, PQExpBuffer out, int failures, bool all_workers,
				  int width, PGresult **queues)
{
	const StatusSource *source = status_source(conn);
	char				nbuf[16];
	PQExpBufferData		workers;
	struct
	{
		const char *sql;
		const char *title;
		const char *param;
	} sections[5];
	int rc;

	if (queues)
		*queues = NULL;
	initPQExpBuffer(&workers);
	rc = status_worker_title(conn, source, all_workers, &workers);
	snprintf(nbuf, sizeof(nbuf), "%d", failures);
	sections[0].sql = width > 0 ? source->queue_sql_fitted : source->queue_sql;
	sections[0].title = "Queues";
	sections[0].param = NULL;
	sections[1].sql = source->worker_sql;
	sections[1].title = workers.data;
	sections[1].param = all_workers ? "true" : "false";
	sections[2].sql = source->running_sql;
	sections[2].title =
		"Running (the longest first, at most " RUNNING_LIMIT ")";
	sections[2].param = NULL;
	sections[3].sql = scheduler_sql;
	sections[3].title = "Schedulers";
	sections[3].param = NULL;
	sections[4].sql = source->failure_sql;
	sections[4].title = "Latest failures";
	sections[4].param = nbuf;

	for (int i = 0; rc == EXIT_OK && i < (failures > 0 ? 5 : 4); i++)
	{
		const char *values[1] = { sections[i].param };
		PGresult   *res;

		res = PQexecParams(conn, sections[i].sql, values[0] ? 1 : 0, NULL,
						   values, NULL, NULL, 0);
		rc = ctl_conn_check(conn, res, &source->needs, "status");
		if (rc != EXIT_OK)
		{
			PQclear(res);
			break;
		}
		if (width > 0)
			ctl_table_fit(out, res, sections[i].title, width);
		else
			ctl_table_render(out, res, sections[i].title,
							 PQclientEncoding(conn));
		if (i == 0 && queues)
			*queues = res;
		else
			PQclear(res);
	}
	termPQExpBuffer(&workers);
	return rc;
}

static const struct option status_options[] = {
	{ "dbname", required_argument, NULL, 'd' },
	{ "help", no_argument, NULL, 'H' },
	{ "failures", required_argument, NULL, 'f' },
	{ "all-workers", no_argument, NULL, 'a' },
	{ NULL, 0, NULL, 0 }
};

/* schedqctl status: print the tables once; returns the exit code. */
int
ctl_status_command(int argc, char **argv)
{
	const char	   *conninfo = NULL;
	int				failures = 10;
	bool			all_workers = false;
	int				c;
	PGconn		   *conn;
	PQExpBufferData out;
	int				rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "d:", status_options, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				conninfo = optarg;
				break;
			case 'H':
				ctl_main_usage("status", false);
				return EXIT_OK;
			case 'f':
				if (!option_parse_int(optarg, "--failures", 0, 1000, &failures))
					return EXIT_USAGE;
				break;
			case 'a':
				all_workers = true;
				break;
			default:
				return ctl_main_usage_error("status", NULL);
		}
	}
	if (optind < argc)
		return ctl_main_usage_error("status", "unexpected argument \"%s\"",
									argv[optind]);
	conn = ctl_conn_connect(conninfo, false);
	if (conn == NULL)
		return EXIT_CONNECT;
	/* Every privilege first: print everything, or nothing. */
	rc = ctl_status_require(conn, "status");
	if (rc == EXIT_OK)
	{
		initPQExpBuffer(&out);
		rc = ctl_status_render(conn, &out, failures, all_workers, 0, NULL);
		/* A failure after the check (the connection broke): nothing. */
		if (rc == EXIT_OK)
			fputs(out.data, stdout);
		termPQExpBuffer(&out);
	}
	PQfinish(conn);
	return rc;
}
