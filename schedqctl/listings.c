/*-------------------------------------------------------------------------
 * schedqctl/listings.c
 *	  schedules and runs: the periodic tasks and the workflow runs.
 *
 *	  schedules prints every schedule the role may see (schedq.periodic,
 *	  under row-level security) with its next and last tick, what it
 *	  submits, and how often it fired or skipped.  runs prints the
 *	  workflow runs (schedq.run), newest first, with their tasks counted
 *	  by outcome; --status and --limit narrow them.  Both are psql's
 *	  tables (table.c); times are the session's (PGTZ), with their offset.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <limits.h>

#include "common/logging.h"
#include "fe_utils/option_utils.h"
#include "getopt_long.h"
#include "schedqctl.h"

#define LISTING_TIME(col)                                                      \
	"pg_catalog.to_char(" col ", 'YYYY-MM-DD HH24:MI:SSOF')"

static const char *const schedules_sql =
	"SELECT name, schedule, timezone, CASE WHEN enabled THEN 'yes' ELSE 'no' "
	"END AS enabled, " LISTING_TIME("next_run") " AS \"next run\", " LISTING_TIME(
		"last_run") " AS \"last run\", kind, queue, fired, skipped, "
					"last_error AS error FROM schedq.periodic ORDER BY name";

static const char *const runs_sql =
	"SELECT r.id, r.name, r.status, r.failure_policy AS policy, "
	"count(t.id) AS tasks, count(t.id) FILTER (WHERE t.status = 'done') AS "
	"done, count(t.id) FILTER (WHERE t.status = 'failed') AS failed, "
	"count(t.id) FILTER (WHERE t.status IN ('canceled', 'skipped')) AS "
	"\"canceled\", count(t.id) FILTER (WHERE t.status IN ('pending', "
	"'available', 'running')) AS live, " LISTING_TIME("r.created_at") " AS created, " LISTING_TIME(
		"r.finished_at") " AS finished "
						 "FROM (SELECT * FROM schedq.run WHERE $1::text IS NULL OR status = "
						 "$1::text ORDER BY id DESC LIMIT $2::integer) AS r "
						 "LEFT JOIN schedq.task t ON t.run_id = r.id "
						 "GROUP BY r.id, r.name, r.status, r.failure_policy, r.created_at, "
						 "r.finished_at ORDER BY r.id DESC";

static const CtlNeeds schedules_needs = { CTL_ROLE_SUBMITTER,
										  { "s:schedq", "t:periodic", NULL } };
static const CtlNeeds runs_needs = { CTL_ROLE_SUBMITTER,
									 { "s:schedq", "t:run", "t:task", NULL } };

enum
{
	OPT_STATUS = 256,
	OPT_LIMIT
};

static const struct option listing_options[] = {
	{ "dbname", required_argument, NULL, 'd' },
	{ "help", no_argument, NULL, 'H' },
	{ "status", required_argument, NULL, OPT_STATUS },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ NULL, 0, NULL, 0 }
};

/*
 * Parse a listing's options into conninfo and values ($1 status, $2
 * limit; runs only).  Returns -1 to go on, or the exit code.
 */
static int
listing_parse(const char *command, int argc, char **argv, const char **conninfo,
			  const char **values, char *limit)
{
	int c;
	int n;

	optind = 1;
	while ((c = getopt_long(argc, argv, "d:", listing_options, NULL)) != -1)
	{
		if (c == 'd')
			*conninfo = optarg;
		else if (c == 'H')
		{
			ctl_main_usage(command, false);
			return EXIT_OK;
		}
		else if ((c == OPT_STATUS || c == OPT_LIMIT) &&
				 strcmp(command, "runs") != 0)
			return ctl_main_usage_error(command, "--status and --limit are "
												 "options of runs");
		else if (c == OPT_STATUS)
		{
			if (strcmp(optarg, "running") != 0 && strcmp(optarg, "done") != 0 &&
				strcmp(optarg, "failed") != 0 &&
				strcmp(optarg, "canceled") != 0)
			{
				pg_log_error("--status: \"%s\" is not a run's status "
							 "(running, done, failed, canceled)",
							 optarg);
				return EXIT_USAGE;
			}
			values[0] = optarg;
		}
		else if (c == OPT_LIMIT)
		{
			if (!option_parse_int(optarg, "--limit", 1, INT_MAX, &n))
				return EXIT_USAGE;
			snprintf(limit, 16, "%d", n);
			values[1] = limit;
		}
		else
			return ctl_main_usage_error(command, NULL);
	}
	if (optind < argc)
		return ctl_main_usage_error(command, "unexpected argument \"%s\"",
									argv[optind]);
	return -1;
}

/* Run a listing's query and print its table. */
static int
listing_command(const char *command, const char *sql, const CtlNeeds *needs,
				int argc, char **argv)
{
	const char *conninfo = NULL;
	const char *values[2] = { NULL, "50" };
	char		limit[16];
	int		  rc = listing_parse(command, argc, argv, &conninfo, values, limit);
	PGconn	 *conn;
	PGresult *res;

	if (rc >= 0)
		return rc;
	conn = ctl_conn_connect(conninfo, false);
	if (conn == NULL)
		return EXIT_CONNECT;
	rc = ctl_privs_require(conn, needs, command);
	if (rc == EXIT_OK)
	{
		res = PQexecParams(conn, sql, sql == runs_sql ? 2 : 0, NULL, values,
						   NULL, NULL, 0);
		rc = ctl_conn_check(conn, res, needs, command);
		if (rc == EXIT_OK)
		{
			PQExpBufferData out;

			initPQExpBuffer(&out);
			ctl_table_render(&out, res, NULL, PQclientEncoding(conn));
			fputs(out.data, stdout);
			termPQExpBuffer(&out);
		}
		PQclear(res);
	}
	PQfinish(conn);
	return rc;
}

/* schedqctl schedules: the periodic tasks, with their next run. */
int
ctl_listings_schedules(int argc, char **argv)
{
	return listing_command("schedules", schedules_sql, &schedules_needs, argc,
						   argv);
}

/* schedqctl runs [--status S] [--limit N]: the workflow runs. */
int
ctl_listings_runs(int argc, char **argv)
{
	return listing_command("runs", runs_sql, &runs_needs, argc, argv);
}
