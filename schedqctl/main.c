/*-------------------------------------------------------------------------
 * schedqctl/main.c
 *	  schedqctl's entry point: dispatch, and every command's help.
 *
 *	  schedqctl is the command-line tool of schedq: it submits and manages
 *	  tasks, runs any program as a worker, and shows the queues.
 *
 *	  One program, one command per invocation: `schedqctl COMMAND [options]
 *	  [arguments]`.  The commands live in the files of their concern
 *	  (schedqctl.h lists them); this file sets up PostgreSQL's frontend logging,
 *	  dispatches, and holds every command's help text, so that `schedqctl
 *	  help COMMAND` and `schedqctl COMMAND --help` print the same thing.
 *	  The help and the manual page (schedqctl.1) name the same options:
 *	  test/t/040_schedqctl_admin.pl checks it.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "common/logging.h"
#include "schedqctl.h"

/* schedq.control's default_version, from the Makefile. */
#ifndef SCHEDQ_VERSION
#define SCHEDQ_VERSION "(unknown)"
#endif

typedef struct CtlCommand
{
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
	const char *help;
} CtlCommand;

#define CONN_HELP                                                                  \
	"  -d, --dbname=CONNINFO  database to connect to: a name, a conninfo string\n" \
	"                         or a URI; PG* variables, ~/.pgpass and service\n"    \
	"                         files apply as for psql\n"                           \
	"      --help             show this help\n"

/* The task options of submit and submit-sql, and their value forms. */
#define TASK_HELP                                                               \
	"  --queue=Q                queue (default)\n"                              \
	"  --priority=N             higher first (0)\n"                             \
	"  --run-at=TIMESTAMP       not before this time: a date and a time,\n"     \
	"                           e.g. 2030-01-31T09:00:00Z (now)\n"              \
	"  --dedup-key=K            at most one live task of this role per key\n"   \
	"  --max-attempts=N         attempts before it fails for good (5)\n"        \
	"  --timeout=INTERVAL       an attempt's time limit, with its unit: 30s,\n" \
	"                           5min, 2h, '1 day'\n"                            \
	"  --lock-key=K             at most one live task per key runs at once\n"   \
	"  --concurrency-key=K      counted against the key's concurrency limit\n"  \
	"  --caps=C1,C2             capabilities a worker must have\n"              \
	"  --budgets=B1,B2          budgets charged at claim\n"                     \
	"  --cost=N                 charged to each budget (1)\n"                   \
	"  --run=RUN_ID             the workflow run it belongs to\n"               \
	"  --depends-on=ID1,ID2     tasks of the run that must be done first\n"

/* The filters of list, cancel and retry. */
#define FILTER_HELP                                                            \
	"  --queue=Q            tasks of queue Q\n"                                \
	"  --kind=K             tasks of kind K\n"                                 \
	"  --status=S1,S2       tasks in these statuses (pending, available,\n"    \
	"                       running, done, failed, canceled, skipped)\n"       \
	"  --run=RUN_ID         tasks of a workflow run\n"                         \
	"  --older-than=INTERVAL  tasks created longer ago than INTERVAL (1h)\n"

static const CtlCommand commands[] = {
	{ "submit", ctl_admin_submit, "submit a task and print its id",
	  "usage: schedqctl submit KIND [options]\n"
	  "Submit a task of kind KIND; prints its id (or, with --dedup-key, the id\n"
	  "of the live task that holds the key).\n\n"
	  "  --payload=JSON|@FILE|-   the payload: JSON text, a file, or stdin ({})\n" TASK_HELP
		  CONN_HELP },
	{ "submit-sql", ctl_admin_submit_sql, "submit a SQL task",
	  "usage: schedqctl submit-sql COMMAND [options]\n"
	  "Submit a task that schedq's SQL executor runs: COMMAND is SQL text,\n"
	  "@FILE or - (stdin); prints its id.  Options as for submit, without\n"
	  "--payload.\n\n" TASK_HELP CONN_HELP },
	{ "submit-many", ctl_many_command, "submit tasks from JSON lines",
	  "usage: schedqctl submit-many [FILE|-]\n"
	  "Submit one task per line of FILE (or stdin): a JSON object of submit's\n"
	  "argument names, e.g. {\"kind\": \"email.send\", \"payload\": {...}}.  All\n"
	  "are submitted or none; prints their ids, one a line.\n\n" CONN_HELP },
	{ "show", ctl_tasks_show, "show a task: status, result, error, timings",
	  "usage: schedqctl show ID [options]\n"
	  "Print a task's fields, one a line: status, attempts, times, payload,\n"
	  "result, error.  Exit status 5 if there is no such task.\n\n"
	  "  --json               the task as one JSON object\n" CONN_HELP },
	{ "list", ctl_filter_list, "list tasks, newest first",
	  "usage: schedqctl list [options]\n"
	  "List the tasks the filters select, newest first.\n\n" FILTER_HELP
	  "  --limit=N            at most N tasks (50)\n" CONN_HELP },
	{ "wait", ctl_tasks_wait, "wait until a task has finished",
	  "usage: schedqctl wait ID [options]\n"
	  "Wait until a task has finished; print its result if it is done.  Exit\n"
	  "status 0 done, 6 failed, 7 canceled, 8 skipped, 9 still running at\n"
	  "--timeout, 5 no such task.\n\n"
	  "  --timeout=INTERVAL   give up after INTERVAL (30s, 5min, ...)\n" CONN_HELP },
	{ "cancel", ctl_filter_cancel,
	  "cancel a task, or the tasks a filter selects",
	  "usage: schedqctl cancel ID\n"
	  "       schedqctl cancel {FILTERS | --all} [--limit=N] [--dry-run]\n"
	  "Cancel a task that has not finished, or the live tasks the filters\n"
	  "select (all in one transaction).  Exit status 5 if nothing was\n"
	  "canceled.\n\n" FILTER_HELP
	  "  --all                every task (no filter needed)\n"
	  "  --limit=N            at most N tasks, lowest ids first\n"
	  "  --dry-run            say how many would be canceled; change nothing\n" CONN_HELP },
	{ "retry", ctl_filter_retry, "run finished tasks again",
	  "usage: schedqctl retry ID\n"
	  "       schedqctl retry {FILTERS | --all} [--limit=N] [--dry-run]\n"
	  "Run a finished task again with a fresh allowance of attempts, or the\n"
	  "finished tasks the filters select (failed ones unless --status names\n"
	  "others; all in one transaction).  Exit status 5 if nothing was\n"
	  "retried.\n\n" FILTER_HELP
	  "  --all                every failed task (no filter needed)\n"
	  "  --limit=N            at most N tasks, lowest ids first\n"
	  "  --dry-run            say how many would be retried; change nothing\n" CONN_HELP },
	{ "pause", ctl_admin_pause, "stop claims from a queue",
	  "usage: schedqctl pause QUEUE\n"
	  "Stop claims from QUEUE until it is resumed (an admin's command).\n\n" CONN_HELP },
	{ "resume", ctl_admin_resume, "allow claims from a paused queue",
	  "usage: schedqctl resume QUEUE\n"
	  "Allow claims from a paused queue again (an admin's command).\n\n" CONN_HELP },
	{ "schedule", ctl_admin_schedule, "create or replace a periodic task",
	  "usage: schedqctl schedule NAME SCHEDULE KIND [options]\n"
	  "Create or replace (by NAME) a periodic task: SCHEDULE is a cron\n"
	  "expression ('*/5 * * * *'), '@daily', ... (see\n"
	  "docs/guide/periodic.md#schedule-syntax).\n\n"
	  "  --payload=JSON|@FILE|-   the payload of each task ({})\n"
	  "  --timezone=TZ            time zone of the schedule (UTC)\n"
	  "  --queue=Q                queue of each task (default)\n"
	  "  --priority=N, --max-attempts=N, --timeout=INTERVAL, --lock-key=K,\n"
	  "  --concurrency-key=K, --caps=C1,C2, --budgets=B1,B2, --cost=N\n"
	  "                           as for submit, for each task\n" CONN_HELP },
	{ "unschedule", ctl_admin_unschedule, "remove a periodic task",
	  "usage: schedqctl unschedule NAME\n"
	  "Remove a periodic task.  Exit status 5 if there is none by that name.\n\n" CONN_HELP },
	{ "schedules", ctl_listings_schedules, "list the periodic tasks",
	  "usage: schedqctl schedules [options]\n"
	  "List the periodic tasks: schedule, time zone, next and last run, what\n"
	  "each submits, ticks fired and skipped, the last error.\n\n" CONN_HELP },
	{ "runs", ctl_listings_runs, "list the workflow runs",
	  "usage: schedqctl runs [options]\n"
	  "List the workflow runs, newest first, with their tasks counted by\n"
	  "outcome.\n\n"
	  "  --status=S           runs in status S (running, done, failed,\n"
	  "                       canceled)\n"
	  "  --limit=N            at most N runs (50)\n" CONN_HELP },
	{ "worker", ctl_worker_command, "run a program for each task",
	  "usage: schedqctl worker [options] -- COMMAND [ARGS...]\n"
	  "Claim tasks and run COMMAND for each, in its own process group, with\n"
	  "the payload on stdin and SCHEDQ_TASK_ID, SCHEDQ_ATTEMPT, SCHEDQ_KIND,\n"
	  "SCHEDQ_QUEUE and SCHEDQ_RUN_ID in its environment.\n"
	  "  exit 0        the task is done; stdout is its result (as JSON if it\n"
	  "                is JSON, else {\"stdout\": \"...\"}; none if empty)\n"
	  "  exit 75       (EX_TEMPFAIL) the attempt failed: retried while\n"
	  "                attempts remain\n"
	  "  exit 126, 127 COMMAND could not be run: the worker's fault, not the\n"
	  "                task's; the task is given back and the worker stops\n"
	  "  other exits   the task failed for good, with the tail of stderr\n"
	  "  a signal      the attempt failed (retried), with the tail of stderr\n"
	  "COMMAND is looked up (in PATH, as execvp does) before anything is\n"
	  "claimed, and again before each claim.  The lease is renewed every\n"
	  "third of it while COMMAND runs; when the lease cannot be renewed (the\n"
	  "task's timeout, or the server out of reach) the process group is\n"
	  "killed at its end.\n\n"
	  "  --queue=Q           claim from Q (repeatable; default: every queue)\n"
	  "  --caps=C1,C2        this worker's capabilities\n"
	  "  --concurrency=N     tasks run at once (1)\n"
	  "  --lease=INTERVAL    lease of each claim, with its unit: 30s, 5min\n"
	  "                      (schedq.default_lease)\n"
	  "  --grace=SECONDS     on SIGTERM/SIGINT, how long running tasks may\n"
	  "                      finish before they are killed and failed for\n"
	  "                      retry (30); a second signal exits at once\n"
	  "  --name=NAME         worker name in schedq.task.claimed_by\n"
	  "                      (schedqctl@HOST:PID)\n"
	  "  --wait=SECONDS      longest single wait for a task (5); a stop waits\n"
	  "                      for the current wait to end\n"
	  "  --json              log JSON lines instead of text\n" CONN_HELP
	  "Logs one line per task on stderr: id, kind, attempt, duration, outcome\n"
	  "(done, retry, failed, stale, lost, timeout, returned).  Exit status 0\n"
	  "after a shutdown by signal, 1 after a second signal, 2 if COMMAND\n"
	  "cannot be run, 3 if the first connection fails, 4 if a privilege or\n"
	  "schedq is missing.\n" },
	{ "status", ctl_status_command,
	  "show queues, workers, schedulers, failures",
	  "usage: schedqctl status [options]\n"
	  "Print the queues (tasks by status, oldest available), the workers\n"
	  "seen in the last 10 minutes, the scheduler of each database and the\n"
	  "latest failures; or, if a privilege is missing, nothing but the GRANTs\n"
	  "it needs.\n\n"
	  "  --failures=N        failures to show (10)\n"
	  "  --all-workers       every worker of the retained tasks\n" CONN_HELP },
	{ "top", ctl_top_command, "show the queues live",
	  "usage: schedqctl top [options]\n"
	  "What status shows, refreshed every second and fitted to the terminal,\n"
	  "with the rate of tasks done per second and a sparkline of it per\n"
	  "queue.  Up, Down, PgUp, PgDn, Home and End scroll; q quits.\n\n"
	  "  --interval=SECONDS  refresh interval (1)\n" CONN_HELP },
	{ "web", ctl_web_command, "serve a live console in a browser",
	  "usage: schedqctl web [options]\n"
	  "Serve a console of the queues, tasks, workflows, schedules, gates and\n"
	  "workers over HTTP, live.  A browser signs in with a PostgreSQL role and\n"
	  "its password; the console connects as that role, whose privileges\n"
	  "decide what it sees and may do.  Stops at SIGINT or SIGTERM.\n\n"
	  "  --listen=HOST:PORT  address to listen on (127.0.0.1:8080)\n"
	  "  --allow-host=NAME   also answer to this Host (repeatable)\n"
	  "  --read-only         offer no action, and refuse any\n"
	  "  --no-sign-in        with --read-only: no sign-in, connect as -d says\n"
	  "  --tls-cert=FILE     serve HTTPS with this certificate (PEM) ...\n"
	  "  --tls-key=FILE      ... and this key\n" CONN_HELP },
	{ NULL, NULL, NULL, NULL }
};

static const char *exit_help =
	"Exit status: 0 done; 1 the server refused or something failed; 2 bad\n"
	"command line or a bad value; 3 no connection; 4 a privilege is missing\n"
	"(the message names the GRANTs) or schedq is not installed; 5 nothing\n"
	"to do or nothing found; wait: 6 failed, 7 canceled, 8 skipped, 9 timed\n"
	"out.\n";

/* The command of that name, or NULL. */
static const CtlCommand *
find_command(const char *name)
{
	for (const CtlCommand *c = commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

/* Print a command's help (NULL: the overview). */
void
ctl_main_usage(const char *command, bool to_stderr)
{
	FILE			 *out = to_stderr ? stderr : stdout;
	const CtlCommand *c = command ? find_command(command) : NULL;

	if (c != NULL)
	{
		fputs(c->help, out);
		fputs("\n", out);
		fputs(exit_help, out);
		return;
	}
	fputs("schedqctl: submit, manage and run schedq tasks, and watch the "
		  "queues.\n\nusage: schedqctl COMMAND [options] [arguments]\n\n"
		  "Commands:\n",
		  out);
	for (c = commands; c->name; c++)
		fprintf(out, "  %-12s %s\n", c->name, c->summary);
	fputs("  help         show the help of a command\n\n"
		  "schedqctl help COMMAND, or schedqctl COMMAND --help, for a "
		  "command's options; man schedqctl for all of it.\n\n",
		  out);
	fputs(exit_help, out);
}

/*
 * A usage error of a command: say what is wrong (if fmt is not NULL), point
 * at the help, and return EXIT_USAGE.
 */
int
ctl_main_usage_error(const char *command, const char *fmt, ...)
{
	if (fmt != NULL)
	{
		char	msg[1024];
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		pg_log_error("%s: %s", command, msg);
	}
	pg_log_error_hint("Try \"schedqctl help %s\".", command);
	return EXIT_USAGE;
}

/* Dispatch to the command argv[1] names, or print the help. */
int
main(int argc, char **argv)
{
	const CtlCommand *c;

	pg_logging_init(argv[0]);
	if (argc < 2)
	{
		ctl_main_usage(NULL, true);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
		strcmp(argv[1], "-?") == 0 || strcmp(argv[1], "-h") == 0)
	{
		if (argc > 2 && find_command(argv[2]) == NULL)
		{
			pg_log_error("unknown command \"%s\"", argv[2]);
			return EXIT_USAGE;
		}
		ctl_main_usage(argc > 2 ? argv[2] : NULL, false);
		return EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0)
	{
		puts("schedqctl (schedq) " SCHEDQ_VERSION);
		return EXIT_OK;
	}
	c = find_command(argv[1]);
	if (c == NULL)
	{
		pg_log_error("unknown command \"%s\"", argv[1]);
		pg_log_error_hint("Try \"schedqctl help\".");
		return EXIT_USAGE;
	}
	/* The command parses its own options; argv[0] is its name. */
	return c->run(argc - 1, argv + 1);
}
