/*-------------------------------------------------------------------------
 * schedqctl/admin.c
 *	  The commands that call one schedq function and print its answer.
 *
 *	  They are submit, cancel, retry, pause, resume, schedule and
 *	  unschedule.
 *
 *	  Options the user gave become named arguments of the call: the query
 *	  text is put together from fixed fragments (", queue => $3"), and every
 *	  value travels as a parameter, so an option left out takes the
 *	  function's own default and no value is ever parsed as SQL.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "common/logging.h"
#include "getopt_long.h"
#include "schedqctl.h"

#define MAX_ARGS 16

/* A call being put together: its text and its parameter values. */
typedef struct CtlCall
{
	PQExpBufferData sql;
	const char	   *values[MAX_ARGS];
	int				n;
} CtlCall;

/* Start the call of the schedq function of that name. */
static void
call_start(CtlCall *call, const char *function)
{
	initPQExpBuffer(&call->sql);
	appendPQExpBuffer(&call->sql, "SELECT schedq.%s(", function);
	call->n = 0;
}

/* Add a positional argument: "$n::type". */
static void
call_arg(CtlCall *call, const char *value, const char *type)
{
	call->values[call->n++] = value;
	appendPQExpBuffer(&call->sql, "%s$%d::%s", call->n > 1 ? ", " : "", call->n,
					  type);
}

/* Add a named argument if it was given: ", name => $n::type". */
static void
call_named(CtlCall *call, const char *name, const char *value, const char *type)
{
	if (value == NULL)
		return;
	call->values[call->n++] = value;
	appendPQExpBuffer(&call->sql, ", %s => $%d::%s", name, call->n, type);
}

/*
 * Run the call on a new connection and print its one value.  Returns the
 * exit code; *value gets a copy of the value when wanted.
 */
static int
call_run(CtlCall *call, const char *conninfo, CtlRole role, const char *what,
		 bool print, char **value)
{
	PGconn	 *conn;
	PGresult *res;
	int		  rc;

	appendPQExpBufferChar(&call->sql, ')');
	ctl_text_check(&call->sql);
	conn = ctl_conn_connect(conninfo, false);
	if (conn == NULL)
	{
		termPQExpBuffer(&call->sql);
		return EXIT_CONNECT;
	}
	res = PQexecParams(conn, call->sql.data, call->n, NULL, call->values, NULL,
					   NULL, 0);
	rc = ctl_conn_check(conn, res, role, what);
	if (rc == EXIT_OK && PQntuples(res) == 1 && PQnfields(res) == 1)
	{
		if (print)
			printf("%s\n", PQgetvalue(res, 0, 0));
		if (value)
			*value = pg_strdup(PQgetvalue(res, 0, 0));
	}
	PQclear(res);
	PQfinish(conn);
	termPQExpBuffer(&call->sql);
	return rc;
}

enum
{
	OPT_PAYLOAD = 256,
	OPT_QUEUE,
	OPT_PRIORITY,
	OPT_RUN_AT,
	OPT_DEDUP_KEY,
	OPT_MAX_ATTEMPTS,
	OPT_TIMEOUT,
	OPT_LOCK_KEY,
	OPT_CONCURRENCY_KEY,
	OPT_CAPS,
	OPT_TIMEZONE
};

static const struct option submit_options[] = {
	{ "dbname", required_argument, NULL, 'd' },
	{ "help", no_argument, NULL, 'H' },
	{ "payload", required_argument, NULL, OPT_PAYLOAD },
	{ "queue", required_argument, NULL, OPT_QUEUE },
	{ "priority", required_argument, NULL, OPT_PRIORITY },
	{ "run-at", required_argument, NULL, OPT_RUN_AT },
	{ "dedup-key", required_argument, NULL, OPT_DEDUP_KEY },
	{ "max-attempts", required_argument, NULL, OPT_MAX_ATTEMPTS },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "lock-key", required_argument, NULL, OPT_LOCK_KEY },
	{ "concurrency-key", required_argument, NULL, OPT_CONCURRENCY_KEY },
	{ "caps", required_argument, NULL, OPT_CAPS },
	{ "timezone", required_argument, NULL, OPT_TIMEZONE },
	{ NULL, 0, NULL, 0 }
};

/* The options of submit and schedule, as given (NULL: not given). */
typedef struct TaskOptions
{
	const char *conninfo;
	const char *payload;
	const char *queue;
	const char *priority;
	const char *run_at;
	const char *dedup_key;
	const char *max_attempts;
	const char *timeout;
	const char *lock_key;
	const char *concurrency_key;
	const char *caps;
	const char *timezone;
	bool		help;
} TaskOptions;

/*
 * Parse the options shared by submit and schedule.  Returns the index of
 * the first positional argument, or -1 after a usage error.
 */
static int
parse_task_options(int argc, char **argv, TaskOptions *o)
{
	int c;

	memset(o, 0, sizeof(*o));
	optind = 1;
	while ((c = getopt_long(argc, argv, "d:", submit_options, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				o->conninfo = optarg;
				break;
			case 'H':
				o->help = true;
				break;
			case OPT_PAYLOAD:
				o->payload = optarg;
				break;
			case OPT_QUEUE:
				o->queue = optarg;
				break;
			case OPT_PRIORITY:
				o->priority = optarg;
				break;
			case OPT_RUN_AT:
				o->run_at = optarg;
				break;
			case OPT_DEDUP_KEY:
				o->dedup_key = optarg;
				break;
			case OPT_MAX_ATTEMPTS:
				o->max_attempts = optarg;
				break;
			case OPT_TIMEOUT:
				o->timeout = optarg;
				break;
			case OPT_LOCK_KEY:
				o->lock_key = optarg;
				break;
			case OPT_CONCURRENCY_KEY:
				o->concurrency_key = optarg;
				break;
			case OPT_CAPS:
				o->caps = optarg;
				break;
			case OPT_TIMEZONE:
				o->timezone = optarg;
				break;
			default:
				return -1;
		}
	}
	return optind;
}

/* Usage error: say so and point at the help. */
static int
usage_error(const char *command, const char *msg)
{
	if (msg)
		pg_log_error("%s: %s", command, msg);
	pg_log_error_hint("Try \"schedqctl help %s\".", command);
	return EXIT_USAGE;
}

/*
 * An option of the other command given to this one (submit takes no
 * --timezone, schedule no --run-at or --dedup-key): the usage error to
 * print, or NULL.
 */
static const char *
misplaced_option(const char *command, const TaskOptions *o)
{
	if (strcmp(command, "submit") == 0 && o->timezone)
		return "--timezone is an option of schedule";
	if (strcmp(command, "schedule") == 0 && (o->run_at || o->dedup_key))
		return "--run-at and --dedup-key are options of submit";
	return NULL;
}

/*
 * submit and schedule: parse the options, expect nargs positional
 * arguments (passed as text, in order), and call schedq.COMMAND with every
 * option given as a named argument.  misplaced_option() has refused the
 * other command's options, so each of the named arguments below reaches
 * only the function that has it; their order is the one both commands
 * have always sent.
 */
static int
task_command(const char *command, int nargs, const char *nargs_error, int argc,
			 char **argv)
{
	TaskOptions		o;
	int				first = parse_task_options(argc, argv, &o);
	const char	   *misplaced;
	CtlCall			call;
	PQExpBufferData payload;
	char		   *caps;
	int				i;
	int				rc;

	if (first < 0)
		return usage_error(command, NULL);
	if (o.help)
	{
		ctl_main_usage(command, false);
		return EXIT_OK;
	}
	if (argc - first != nargs)
		return usage_error(command, nargs_error);
	misplaced = misplaced_option(command, &o);
	if (misplaced)
		return usage_error(command, misplaced);

	initPQExpBuffer(&payload);
	if (o.payload && !ctl_text_read_payload(o.payload, &payload))
	{
		termPQExpBuffer(&payload);
		return EXIT_ERROR;
	}
	caps = o.caps ? ctl_text_list_array(o.caps) : NULL;

	call_start(&call, command);
	for (i = 0; i < nargs; i++)
		call_arg(&call, argv[first + i], "text");
	call_named(&call, "payload", o.payload ? payload.data : NULL, "jsonb");
	call_named(&call, "timezone", o.timezone, "text");
	call_named(&call, "queue", o.queue, "text");
	call_named(&call, "priority", o.priority, "integer");
	call_named(&call, "run_at", o.run_at, "timestamptz");
	call_named(&call, "max_attempts", o.max_attempts, "integer");
	call_named(&call, "timeout", o.timeout, "interval");
	call_named(&call, "lock_key", o.lock_key, "text");
	call_named(&call, "concurrency_key", o.concurrency_key, "text");
	call_named(&call, "required_caps", caps, "text[]");
	call_named(&call, "dedup_key", o.dedup_key, "text");
	rc = call_run(&call, o.conninfo, CTL_ROLE_SUBMITTER, command, true, NULL);
	pg_free(caps);
	termPQExpBuffer(&payload);
	return rc;
}

/* schedqctl submit KIND [options]: submit a task and print its id. */
int
ctl_admin_submit(int argc, char **argv)
{
	return task_command("submit", 1, "exactly one KIND expected", argc, argv);
}

/*
 * schedqctl schedule NAME SCHEDULE KIND [options]: create or replace a
 * periodic task and print its name.
 */
int
ctl_admin_schedule(int argc, char **argv)
{
	return task_command("schedule", 3, "NAME, SCHEDULE and KIND expected", argc,
						argv);
}

static const struct option simple_options[] = {
	{ "dbname", required_argument, NULL, 'd' },
	{ "help", no_argument, NULL, 'H' },
	{ NULL, 0, NULL, 0 }
};

/*
 * A command of one argument calling one function: cancel, retry, pause,
 * resume, unschedule.  A boolean answer of false exits with
 * EXIT_NO_EFFECT and says why.
 */
static int
simple_command(int argc, char **argv, const char *function, const char *type,
			   CtlRole role, const char *false_msg)
{
	const char *command = argv[0];
	const char *conninfo = NULL;
	int			c;
	CtlCall		call;
	char	   *value = NULL;
	int			rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "d:", simple_options, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				conninfo = optarg;
				break;
			case 'H':
				ctl_main_usage(command, false);
				return EXIT_OK;
			default:
				return usage_error(command, NULL);
		}
	}
	if (argc - optind != 1)
		return usage_error(command, "exactly one argument expected");

	call_start(&call, function);
	call_arg(&call, argv[optind], type);
	rc = call_run(&call, conninfo, role, command, false, &value);
	if (rc == EXIT_OK && false_msg != NULL && value != NULL &&
		strcmp(value, "f") == 0)
	{
		pg_log_error(false_msg, argv[optind]);
		rc = EXIT_NO_EFFECT;
	}
	pg_free(value);
	return rc;
}

/* schedqctl cancel ID: cancel a task; exit 5 if that changed nothing. */
int
ctl_admin_cancel(int argc, char **argv)
{
	return simple_command(argc, argv, "cancel", "bigint", CTL_ROLE_SUBMITTER,
						  "task %s was not canceled: it has finished, or is "
						  "not a task of this role");
}

/* schedqctl retry ID: run a finished task again; exit 5 if it is live. */
int
ctl_admin_retry(int argc, char **argv)
{
	return simple_command(argc, argv, "retry", "bigint", CTL_ROLE_SUBMITTER,
						  "task %s was not retried: it has not finished, or "
						  "is not a task of this role");
}

/* schedqctl pause QUEUE: stop claims from a queue. */
int
ctl_admin_pause(int argc, char **argv)
{
	return simple_command(argc, argv, "pause_queue", "text", CTL_ROLE_ADMIN,
						  NULL);
}

/* schedqctl resume QUEUE: allow claims from a paused queue again. */
int
ctl_admin_resume(int argc, char **argv)
{
	return simple_command(argc, argv, "resume_queue", "text", CTL_ROLE_ADMIN,
						  NULL);
}

/* schedqctl unschedule NAME: remove a periodic task; exit 5 if none. */
int
ctl_admin_unschedule(int argc, char **argv)
{
	return simple_command(argc, argv, "unschedule", "text", CTL_ROLE_SUBMITTER,
						  "there is no periodic task named \"%s\"");
}
