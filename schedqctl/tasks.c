/*-------------------------------------------------------------------------
 * schedqctl/tasks.c
 *	  show and wait: one task.
 *
 *	  show prints a task: its status, attempts, result, error and timings,
 *	  one field a line (the fields that have a value), or with --json the
 *	  row as one JSON object.  wait waits until a task has finished and
 *	  exits with its outcome: 0 done (its result on standard output), 6
 *	  failed, 7 canceled, 8 skipped, 9 if --timeout passed first.  schedq
 *	  sends no notice when a task finishes, so wait reads the task's status
 *	  every 50 ms at first, then less often, up to once a second.
 *
 *	  Both read schedq.task, so a role sees the tasks its row-level
 *	  security lets it see; another task is "not found" (exit 5).
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <time.h>

#include "common/logging.h"
#include "getopt_long.h"
#include "schedqctl.h"

/* show: the task's fields that have a value, one row each, in order. */
static const char *const show_sql =
	"SELECT f.k, f.v FROM schedq.task t, LATERAL (VALUES "
	"(1, 'id', t.id::text), (2, 'kind', t.kind), (3, 'queue', t.queue), "
	"(4, 'status', t.status), "
	"(5, 'attempts', t.attempts || ' (' || (t.attempts - t.retry_base) || "
	"' of ' || t.max_attempts || ' since it was submitted or last retried)'),"
	" (6, 'priority', t.priority::text), (7, 'owner', t.owner::text), "
	"(8, 'created', t.created_at::text), (9, 'run at', t.run_at::text), "
	"(10, 'started', t.started_at::text), "
	"(11, 'finished', t.finished_at::text), "
	"(12, 'ran for', CASE WHEN t.finished_at >= t.started_at THEN "
	"(t.finished_at - t.started_at)::text END), "
	"(13, 'claimed by', t.claimed_by), "
	"(14, 'lease until', CASE WHEN t.status = 'running' THEN "
	"t.lease_expires_at::text END), "
	"(15, 'timeout', t.timeout::text), (16, 'run', t.run_id::text), "
	"(17, 'depends on', NULLIF(t.depends_on, '{}')::text), "
	"(18, 'dedup key', t.dedup_key), (19, 'lock key', t.lock_key), "
	"(20, 'concurrency key', t.concurrency_key), "
	"(21, 'caps', NULLIF(t.required_caps, '{}')::text), "
	"(22, 'budgets', NULLIF(t.budgets, '{}')::text), "
	"(23, 'cost', CASE WHEN t.budgets <> '{}' THEN t.cost::text END), "
	"(24, 'periodic', t.periodic), (25, 'payload', t.payload::text), "
	"(26, 'result', t.result::text), (27, 'error', t.last_error)"
	") AS f(o, k, v) WHERE t.id = $1::bigint AND f.v IS NOT NULL "
	"ORDER BY f.o";

/* show --json: the row, but for the claim's nonce. */
static const char *const show_json_sql =
	"SELECT pg_catalog.to_jsonb(t) - 'claim_nonce' FROM schedq.task t "
	"WHERE t.id = $1::bigint";

/* wait: the task's outcome so far. */
static const char *const wait_sql =
	"SELECT status, result, last_error, attempts FROM schedq.task "
	"WHERE id = $1::bigint";

enum
{
	OPT_JSON = 256,
	OPT_TIMEOUT
};

static const struct option task_options[] = {
	{ "dbname", required_argument, NULL, 'd' },
	{ "help", no_argument, NULL, 'H' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ NULL, 0, NULL, 0 }
};

/* The options of show and wait. */
typedef struct TaskArgs
{
	const char *conninfo;
	const char *id;
	const char *timeout;
	bool		json;
} TaskArgs;

/*
 * Parse the options of show or wait and their one task ID.  Returns -1 to
 * go on, or the exit code (EXIT_OK after --help).
 */
static int
tasks_parse(const char *command, int argc, char **argv, TaskArgs *a)
{
	int c;

	memset(a, 0, sizeof(*a));
	optind = 1;
	while ((c = getopt_long(argc, argv, "d:", task_options, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				a->conninfo = optarg;
				break;
			case 'H':
				ctl_main_usage(command, false);
				return EXIT_OK;
			case OPT_JSON:
				if (strcmp(command, "show") != 0)
					return ctl_main_usage_error(command, "--json is an option "
														 "of show");
				a->json = true;
				break;
			case OPT_TIMEOUT:
				if (strcmp(command, "wait") != 0)
					return ctl_main_usage_error(command, "--timeout is an "
														 "option of wait");
				if (!ctl_check_interval_unit(optarg, "--timeout"))
					return EXIT_USAGE;
				a->timeout = optarg;
				break;
			default:
				return ctl_main_usage_error(command, NULL);
		}
	}
	if (argc - optind != 1)
		return ctl_main_usage_error(command, "exactly one task ID expected");
	a->id = argv[optind];
	if (!ctl_check_id(a->id, command))
		return EXIT_USAGE;
	return -1;
}

/* Say that a task is not found, and return EXIT_NO_EFFECT. */
static int
tasks_not_found(const char *command, const char *id)
{
	pg_log_error("%s: there is no task %s (or it is not a task this role can "
				 "see)",
				 command, id);
	return EXIT_NO_EFFECT;
}

/* Print show's fields: "key:" padded, the value; its lines indented. */
static void
tasks_print_fields(PGresult *res)
{
	for (int r = 0; r < PQntuples(res); r++)
	{
		const char *v = PQgetvalue(res, r, 1);
		char		key[64];

		snprintf(key, sizeof(key), "%s:", PQgetvalue(res, r, 0));
		printf("%-16s ", key);
		for (const char *p = v; *p; p++)
		{
			putchar(*p);
			if (*p == '\n' && p[1] != '\0')
				printf("%-17s", "");
		}
		putchar('\n');
	}
}

/* schedqctl show ID [--json]: print a task. */
int
ctl_tasks_show(int argc, char **argv)
{
	TaskArgs	a;
	int			rc = tasks_parse("show", argc, argv, &a);
	PGconn	   *conn;
	PGresult   *res;
	const char *values[1];

	if (rc >= 0)
		return rc;
	conn = ctl_conn_connect(a.conninfo, false);
	if (conn == NULL)
		return EXIT_CONNECT;
	values[0] = a.id;
	res = PQexecParams(conn, a.json ? show_json_sql : show_sql, 1, NULL, values,
					   NULL, NULL, 0);
	rc = ctl_conn_check(conn, res, &ctl_privs_reader, "show");
	if (rc == EXIT_OK && PQntuples(res) == 0)
		rc = tasks_not_found("show", a.id);
	else if (rc == EXIT_OK && a.json)
		printf("%s\n", PQgetvalue(res, 0, 0));
	else if (rc == EXIT_OK)
		tasks_print_fields(res);
	PQclear(res);
	PQfinish(conn);
	return rc;
}

/* Seconds on the monotonic clock. */
static double
tasks_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * The exit code of a finished task's status (row 0 of wait_sql's answer),
 * having printed its result or said how it ended; -1 while it is live.
 */
static int
tasks_outcome(const char *id, PGresult *res)
{
	const char *status = PQgetvalue(res, 0, 0);
	const char *error = PQgetvalue(res, 0, 2);

	if (strcmp(status, "done") == 0)
	{
		if (!PQgetisnull(res, 0, 1))
			printf("%s\n", PQgetvalue(res, 0, 1));
		return EXIT_OK;
	}
	if (strcmp(status, "failed") == 0)
	{
		pg_log_error("task %s failed (attempt %s): %.*s", id,
					 PQgetvalue(res, 0, 3), (int) strcspn(error, "\n"), error);
		return EXIT_TASK_FAILED;
	}
	if (strcmp(status, "canceled") == 0)
	{
		pg_log_error("task %s was canceled", id);
		return EXIT_TASK_CANCELED;
	}
	if (strcmp(status, "skipped") == 0)
	{
		pg_log_error("task %s was skipped: a task it depends on failed", id);
		return EXIT_TASK_SKIPPED;
	}
	return -1;
}

/*
 * --timeout in seconds, by the server's reading of the interval (after
 * its check); 0 without one.  Returns the exit code.
 */
static int
tasks_timeout(PGconn *conn, const char *timeout, double *seconds)
{
	const char *values[1] = { timeout };
	PGresult   *res;
	int			rc;

	*seconds = 0;
	if (timeout == NULL)
		return EXIT_OK;
	rc = ctl_check_cast(conn, timeout, "interval", "--timeout");
	if (rc != EXIT_OK)
		return rc;
	res = PQexecParams(conn, "SELECT extract(epoch FROM $1::interval)", 1, NULL,
					   values, NULL, NULL, 0);
	rc = ctl_conn_check(conn, res, NULL, "wait");
	if (rc == EXIT_OK)
		*seconds = atof(PQgetvalue(res, 0, 0));
	PQclear(res);
	if (rc == EXIT_OK && *seconds <= 0)
	{
		pg_log_error("--timeout: \"%s\" is not a positive interval", timeout);
		rc = EXIT_USAGE;
	}
	return rc;
}

/*
 * schedqctl wait ID [--timeout INTERVAL]: wait until a task has finished;
 * exit with its outcome (see the header).
 */
int
ctl_tasks_wait(int argc, char **argv)
{
	TaskArgs	a;
	int			rc = tasks_parse("wait", argc, argv, &a);
	PGconn	   *conn;
	const char *values[1];
	double		limit;
	double		start = tasks_now();
	long		pause_us = 50000;

	if (rc >= 0)
		return rc;
	conn = ctl_conn_connect(a.conninfo, false);
	if (conn == NULL)
		return EXIT_CONNECT;
	rc = tasks_timeout(conn, a.timeout, &limit);
	values[0] = a.id;
	while (rc == EXIT_OK)
	{
		PGresult *res =
			PQexecParams(conn, wait_sql, 1, NULL, values, NULL, NULL, 0);

		rc = ctl_conn_check(conn, res, &ctl_privs_reader, "wait");
		if (rc == EXIT_OK && PQntuples(res) == 0)
			rc = tasks_not_found("wait", a.id);
		else if (rc == EXIT_OK)
		{
			int outcome = tasks_outcome(a.id, res);

			if (outcome >= 0)
			{
				PQclear(res);
				rc = outcome;
				break;
			}
			if (limit > 0 && tasks_now() - start >= limit)
			{
				pg_log_error("task %s is still %s after %s", a.id,
							 PQgetvalue(res, 0, 0), a.timeout);
				rc = EXIT_WAIT_TIMEOUT;
			}
		}
		PQclear(res);
		if (rc != EXIT_OK)
			break;
		if (limit > 0 && start + limit - tasks_now() < pause_us / 1e6)
			pause_us = (long) ((start + limit - tasks_now()) * 1e6) + 1000;
		pg_usleep(pause_us > 0 ? pause_us : 1000);
		pause_us = Min(pause_us * 3 / 2, 1000000);
	}
	PQfinish(conn);
	return rc;
}
