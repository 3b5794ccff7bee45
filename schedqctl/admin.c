/*-------------------------------------------------------------------------
 * schedqctl/admin.c
 *	  The commands that call one schedq function and print its answer.
 *
 *	  They are submit, submit-sql, schedule, pause, resume and unschedule.
 *	  (cancel and retry, of one task or of those a filter selects, are
 *	  filter.c's.)
 *
 *	  Options the user gave become named arguments of the call: the query
 *	  text is put together from fixed fragments (", queue => $3"), and every
 *	  value travels as a parameter, so an option left out takes the
 *	  function's own default and no value is ever parsed as SQL.  Values
 *	  are checked first (check.c): numbers, ids and JSON here; intervals
 *	  and timestamps cast on the server one by one, so that a bad one is a
 *	  usage error naming its option.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <limits.h>

#include "common/logging.h"
#include "fe_utils/option_utils.h"
#include "getopt_long.h"
#include "schedqctl.h"

#define MAX_ARGS 24

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
 * Run the call on conn and print its one value.  Returns the exit code;
 * *value gets a copy of the value when wanted.
 */
static int
call_run(CtlCall *call, PGconn *conn, const CtlNeeds *needs, const char *what,
		 bool print, char **value)
{
	PGresult *res;
	int		  rc;

	appendPQExpBufferChar(&call->sql, ')');
	ctl_text_check(&call->sql);
	res = PQexecParams(conn, call->sql.data, call->n, NULL, call->values, NULL,
					   NULL, 0);
	rc = ctl_conn_check(conn, res, needs, what);
	if (rc == EXIT_OK && PQntuples(res) == 1 && PQnfields(res) == 1)
	{
		if (print)
			printf("%s\n", PQgetvalue(res, 0, 0));
		if (value)
			*value = pg_strdup(PQgetvalue(res, 0, 0));
	}
	PQclear(res);
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
	OPT_TIMEZONE,
	OPT_BUDGETS,
	OPT_COST,
	OPT_RUN,
	OPT_DEPENDS_ON
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
	{ "budgets", required_argument, NULL, OPT_BUDGETS },
	{ "cost", required_argument, NULL, OPT_COST },
	{ "run", required_argument, NULL, OPT_RUN },
	{ "depends-on", required_argument, NULL, OPT_DEPENDS_ON },
	{ NULL, 0, NULL, 0 }
};

/* The options of submit, submit-sql and schedule (NULL: not given). */
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
	const char *budgets;
	const char *cost;
	const char *run;
	const char *depends_on;
	bool		help;
} TaskOptions;

/* Where each option's value goes in TaskOptions. */
static const char **
task_option_slot(TaskOptions *o, int c)
{
	switch (c)
	{
		case 'd':
			return &o->conninfo;
		case OPT_PAYLOAD:
			return &o->payload;
		case OPT_QUEUE:
			return &o->queue;
		case OPT_PRIORITY:
			return &o->priority;
		case OPT_RUN_AT:
			return &o->run_at;
		case OPT_DEDUP_KEY:
			return &o->dedup_key;
		case OPT_MAX_ATTEMPTS:
			return &o->max_attempts;
		case OPT_TIMEOUT:
			return &o->timeout;
		case OPT_LOCK_KEY:
			return &o->lock_key;
		case OPT_CONCURRENCY_KEY:
			return &o->concurrency_key;
		case OPT_CAPS:
			return &o->caps;
		case OPT_TIMEZONE:
			return &o->timezone;
		case OPT_BUDGETS:
			return &o->budgets;
		case OPT_COST:
			return &o->cost;
		case OPT_RUN:
			return &o->run;
		case OPT_DEPENDS_ON:
			return &o->depends_on;
		default:
			return NULL;
	}
}

/*
 * Parse the options shared by submit, submit-sql and schedule.  Returns the
 * index of the first positional argument, or -1 after a usage error.
 */
static int
parse_task_options(int argc, char **argv, TaskOptions *o)
{
	int c;

	memset(o, 0, sizeof(*o));
	optind = 1;
	while ((c = getopt_long(argc, argv, "d:", submit_options, NULL)) != -1)
	{
		const char **slot = task_option_slot(o, c);

		if (c == 'H')
			o->help = true;
		else if (slot != NULL)
			*slot = optarg;
		else
			return -1;
	}
	return optind;
}

/*
 * An option of another command given to this one: the usage error to
 * print, or NULL.  submit takes no --timezone; schedule no --run-at,
 * --dedup-key, --run or --depends-on (each tick makes a task of its
 * own); submit-sql no --payload (its payload is the command).
 */
static const char *
misplaced_option(const char *command, const TaskOptions *o)
{
	if (strcmp(command, "schedule") != 0 && o->timezone)
		return "--timezone is an option of schedule";
	if (strcmp(command, "schedule") == 0 &&
		(o->run_at || o->dedup_key || o->run || o->depends_on))
		return "--run-at, --dedup-key, --run and --depends-on are options of "
			   "submit";
	if (strcmp(command, "submit_sql") == 0 && o->payload)
		return "--payload is not an option of submit-sql: its payload is the "
			   "command";
	return NULL;
}

/* The values of a task command, checked, ready to be parameters. */
typedef struct TaskValues
{
	PQExpBufferData payload; /* --payload's text, or submit-sql's command */
	char		   *caps;
	char		   *budgets;
	char		   *depends_on;
} TaskValues;

/*
 * Check what can be checked without the server (see the header): numbers,
 * ids, lists and the payload's JSON.  Returns EXIT_OK, or the exit code
 * after saying what is wrong.
 */
static int
task_check_local(const char *command, const TaskOptions *o, TaskValues *v,
				 const char *text_arg)
{
	int n;

	if (o->priority &&
		!option_parse_int(o->priority, "--priority", INT_MIN, INT_MAX, &n))
		return EXIT_USAGE;
	if (o->max_attempts &&
		!option_parse_int(o->max_attempts, "--max-attempts", 1, INT_MAX, &n))
		return EXIT_USAGE;
	if (o->cost && !ctl_check_number(o->cost, "--cost"))
		return EXIT_USAGE;
	if (o->run && !ctl_check_id(o->run, "--run"))
		return EXIT_USAGE;
	if (o->depends_on &&
		(v->depends_on = ctl_check_id_list(o->depends_on, "--depends-on")) ==
			NULL)
		return EXIT_USAGE;
	if (o->timeout && !ctl_check_interval_unit(o->timeout, "--timeout"))
		return EXIT_USAGE;
	v->caps = o->caps ? ctl_text_list_array(o->caps) : NULL;
	v->budgets = o->budgets ? ctl_text_list_array(o->budgets) : NULL;

	/* submit-sql's command (text, @FILE or -), or --payload's JSON. */
	if (strcmp(command, "submit_sql") == 0)
		return ctl_text_read_payload(text_arg, &v->payload) ? EXIT_OK :
															  EXIT_ERROR;
	if (o->payload)
	{
		if (!ctl_text_read_payload(o->payload, &v->payload))
			return EXIT_ERROR;
		if (!ctl_check_json(v->payload.data, v->payload.len, "--payload"))
			return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* The server's checks of the values only it can parse. */
static int
task_check_server(PGconn *conn, const TaskOptions *o)
{
	int rc = EXIT_OK;

	if (o->run_at)
		rc = ctl_check_cast(conn, o->run_at, "timestamptz", "--run-at");
	if (rc == EXIT_OK && o->timeout)
		rc = ctl_check_cast(conn, o->timeout, "interval", "--timeout");
	return rc;
}

/*
 * submit, submit-sql and schedule: parse the options, expect nargs
 * positional arguments (passed as text, in order; submit-sql's is the
 * command, read as a payload is), check the values, and call
 * schedq.FUNCTION with every option given as a named argument.
 * misplaced_option() has refused the other commands' options, so each of
 * the named arguments below reaches only a function that has it.
 */
static int
task_command(const char *command, const char *function, int nargs,
			 const char *nargs_error, int argc, char **argv)
{
	TaskOptions o;
	TaskValues	v;
	int			first = parse_task_options(argc, argv, &o);
	const char *misplaced;
	CtlCall		call;
	CtlNeeds	needs;
	PGconn	   *conn = NULL;
	char		fname[64];
	int			rc;

	if (first < 0)
		return ctl_main_usage_error(command, NULL);
	if (o.help)
	{
		ctl_main_usage(command, false);
		return EXIT_OK;
	}
	if (argc - first != nargs)
		return ctl_main_usage_error(command, "%s", nargs_error);
	misplaced = misplaced_option(function, &o);
	if (misplaced)
		return ctl_main_usage_error(command, "%s", misplaced);

	memset(&v, 0, sizeof(v));
	initPQExpBuffer(&v.payload);
	rc = task_check_local(function, &o, &v, argv[first]);
	if (rc == EXIT_OK)
	{
		conn = ctl_conn_connect(o.conninfo, false);
		rc = conn ? task_check_server(conn, &o) : EXIT_CONNECT;
	}
	if (rc == EXIT_OK)
	{
		call_start(&call, function);
		if (strcmp(function, "submit_sql") == 0)
			call_arg(&call, v.payload.data, "text");
		else
			for (int i = 0; i < nargs; i++)
				call_arg(&call, argv[first + i], "text");
		if (strcmp(function, "submit_sql") != 0)
			call_named(&call, "payload", o.payload ? v.payload.data : NULL,
					   "jsonb");
		call_named(&call, "timezone", o.timezone, "text");
		call_named(&call, "queue", o.queue, "text");
		call_named(&call, "priority", o.priority, "integer");
		call_named(&call, "run_at", o.run_at, "timestamptz");
		call_named(&call, "max_attempts", o.max_attempts, "integer");
		call_named(&call, "timeout", o.timeout, "interval");
		call_named(&call, "lock_key", o.lock_key, "text");
		call_named(&call, "concurrency_key", o.concurrency_key, "text");
		call_named(&call, "required_caps", v.caps, "text[]");
		call_named(&call, "budgets", v.budgets, "text[]");
		call_named(&call, "cost", o.cost, "numeric");
		call_named(&call, "run_id", o.run, "bigint");
		call_named(&call, "depends_on", v.depends_on, "bigint[]");
		call_named(&call, "dedup_key", o.dedup_key, "text");
		snprintf(fname, sizeof(fname), "f:%s", function);
		needs = ctl_privs_function(CTL_ROLE_SUBMITTER, fname);
		rc = call_run(&call, conn, &needs, command, true, NULL);
	}
	PQfinish(conn);
	pg_free(v.caps);
	pg_free(v.budgets);
	pg_free(v.depends_on);
	termPQExpBuffer(&v.payload);
	return rc;
}

/* schedqctl submit KIND [options]: submit a task and print its id. */
int
ctl_admin_submit(int argc, char **argv)
{
	return task_command("submit", "submit", 1, "exactly one KIND expected",
						argc, argv);
}

/*
 * schedqctl submit-sql COMMAND [options]: submit a SQL task (COMMAND as
 * text, @FILE or - for standard input) and print its id.
 */
int
ctl_admin_submit_sql(int argc, char **argv)
{
	return task_command("submit-sql", "submit_sql", 1,
						"exactly one COMMAND expected (SQL text, @FILE or -)",
						argc, argv);
}

/*
 * schedqctl schedule NAME SCHEDULE KIND [options]: create or replace a
 * periodic task and print its name.
 */
int
ctl_admin_schedule(int argc, char **argv)
{
	return task_command("schedule", "schedule", 3,
						"NAME, SCHEDULE and KIND expected", argc, argv);
}

static const struct option simple_options[] = {
	{ "dbname", required_argument, NULL, 'd' },
	{ "help", no_argument, NULL, 'H' },
	{ NULL, 0, NULL, 0 }
};

/*
 * A command of one argument calling one function: pause, resume,
 * unschedule.  A boolean answer of false exits with EXIT_NO_EFFECT and
 * says why.
 */
static int
simple_command(int argc, char **argv, const char *function, const char *type,
			   const CtlNeeds *needs, const char *false_msg)
{
	const char *command = argv[0];
	const char *conninfo = NULL;
	int			c;
	CtlCall		call;
	PGconn	   *conn;
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
				return ctl_main_usage_error(command, NULL);
		}
	}
	if (argc - optind != 1)
		return ctl_main_usage_error(command, "exactly one argument expected");

	conn = ctl_conn_connect(conninfo, false);
	if (conn == NULL)
		return EXIT_CONNECT;
	call_start(&call, function);
	call_arg(&call, argv[optind], type);
	rc = call_run(&call, conn, needs, command, false, &value);
	if (rc == EXIT_OK && false_msg != NULL && value != NULL &&
		strcmp(value, "f") == 0)
	{
		pg_log_error(false_msg, argv[optind]);
		rc = EXIT_NO_EFFECT;
	}
	pg_free(value);
	PQfinish(conn);
	return rc;
}

/* schedqctl pause QUEUE: stop claims from a queue. */
int
ctl_admin_pause(int argc, char **argv)
{
	CtlNeeds needs = ctl_privs_function(CTL_ROLE_ADMIN, "f:pause_queue");

	return simple_command(argc, argv, "pause_queue", "text", &needs, NULL);
}

/* schedqctl resume QUEUE: allow claims from a paused queue again. */
int
ctl_admin_resume(int argc, char **argv)
{
	CtlNeeds needs = ctl_privs_function(CTL_ROLE_ADMIN, "f:resume_queue");

	return simple_command(argc, argv, "resume_queue", "text", &needs, NULL);
}

/* schedqctl unschedule NAME: remove a periodic task; exit 5 if none. */
int
ctl_admin_unschedule(int argc, char **argv)
{
	CtlNeeds needs = ctl_privs_function(CTL_ROLE_SUBMITTER, "f:unschedule");

	return simple_command(argc, argv, "unschedule", "text", &needs,
						  "there is no periodic task named \"%s\"");
}
