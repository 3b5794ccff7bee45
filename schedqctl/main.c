/*-------------------------------------------------------------------------
 * schedqctl/main.c
 *	  schedqctl's entry point: dispatch, and every command's help.
 *
 *	  schedqctl is the command-line tool of schedq: it submits and manages
 *	  tasks, runs any program as a worker, and shows the queues.
 *
 *	  One program, one command per invocation: `schedqctl COMMAND [options]
 *	  [arguments]`.  Each command lives in its own file (admin.c, worker.c,
 *	  status.c, top.c); this file sets up PostgreSQL's frontend logging,
 *	  dispatches, and holds every command's help text, so that `schedqctl
 *	  help COMMAND` and `schedqctl COMMAND --help` print the same thing.
 *	  The help and the manual page (schedqctl.1) name the same options:
 *	  test/t/040_schedqctl_admin.pl checks it.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "common/logging.h"
#include "schedqctl.h"

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

static const CtlCommand commands[] = {
	{ "submit", ctl_admin_submit, "submit a task and print its id",
	  "usage: schedqctl submit KIND [options]\n"
	  "Submit a task of kind KIND; prints its id (or, with --dedup-key, the id\n"
	  "of the live task that holds the key).\n\n"
	  "  --payload=JSON|@FILE|-   the payload: JSON text, a file, or stdin ({})\n"
	  "  --queue=Q                queue (default)\n"
	  "  --priority=N             higher first (0)\n"
	  "  --run-at=TIMESTAMP       not before this time (now)\n"
	  "  --dedup-key=K            at most one live task of this role per key\n"
	  "  --max-attempts=N         attempts before it fails for good (5)\n"
	  "  --timeout=INTERVAL       an attempt's time limit, e.g. '5 minutes'\n"
	  "  --lock-key=K             at most one live task per key runs at once\n"
	  "  --concurrency-key=K      counted against the key's concurrency limit\n"
	  "  --caps=C1,C2             capabilities a worker must have\n" CONN_HELP },
	{ "cancel", ctl_admin_cancel, "cancel a task",
	  "usage: schedqctl cancel ID\n"
	  "Cancel a task that has not finished.  Exit status 5 if there was\n"
	  "nothing to cancel (finished, or not a task this role can see).\n\n" CONN_HELP },
	{ "retry", ctl_admin_retry, "run a finished task again",
	  "usage: schedqctl retry ID\n"
	  "Run a finished task again with a fresh allowance of attempts.  Exit\n"
	  "status 5 if the task is not finished.\n\n" CONN_HELP },
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
	  "  --concurrency-key=K, --caps=C1,C2   as for submit, for each task\n" CONN_HELP },
	{ "unschedule", ctl_admin_unschedule, "remove a periodic task",
	  "usage: schedqctl unschedule NAME\n"
	  "Remove a periodic task.  Exit status 5 if there is none by that name.\n\n" CONN_HELP },
	{ "worker", ctl_worker_command, "run a program for each task",
	  "usage: schedqctl worker [options] -- COMMAND [ARGS...]\n"
	  "Claim tasks and run COMMAND for each, in its own process group, with\n"
	  "the payload on stdin and SCHEDQ_TASK_ID, SCHEDQ_ATTEMPT, SCHEDQ_KIND,\n"
	  "SCHEDQ_QUEUE and SCHEDQ_RUN_ID in its environment.\n"
	  "  exit 0        the task is done; stdout is its result (as JSON if it\n"
	  "                is JSON, else {\"stdout\": \"...\"}; none if empty)\n"
	  "  exit 75       (EX_TEMPFAIL) the attempt failed: retried while\n"
	  "                attempts remain\n"
	  "  other exits   the task failed for good, with the tail of stderr\n"
	  "  a signal      the attempt failed (retried), with the tail of stderr\n"
	  "The lease is renewed every third of it while COMMAND runs; when the\n"
	  "lease cannot be renewed (the task's timeout, or the server out of reach)\n"
	  "the process group is killed at its end.\n\n"
	  "  --queue=Q           claim from Q (repeatable; default: every queue)\n"
	  "  --caps=C1,C2        this worker's capabilities\n"
	  "  --concurrency=N     tasks run at once (1)\n"
	  "  --lease=INTERVAL    lease of each claim (schedq.default_lease)\n"
	  "  --grace=SECONDS     on SIGTERM/SIGINT, how long running tasks may\n"
	  "                      finish before they are killed and failed for\n"
	  "                      retry (30); a second signal exits at once\n"
	  "  --name=NAME         worker name in schedq.task.claimed_by\n"
	  "                      (schedqctl@HOST:PID)\n"
	  "  --wait=SECONDS      longest single wait for a task (30)\n"
	  "  --json              log JSON lines instead of text\n" CONN_HELP
	  "Logs one line per task on stderr: id, kind, attempt, duration, outcome\n"
	  "(done, retry, failed, stale, lost, timeout).  Exit status 0 after a\n"
	  "shutdown by signal, 1 after a second signal, 3 if the first connection\n"
	  "fails, 4 if a privilege is missing.\n" },
	{ "status", ctl_status_command,
	  "show queues, workers, schedulers, failures",
	  "usage: schedqctl status [options]\n"
	  "Print the queues (tasks by status, oldest available), the workers,\n"
	  "the scheduler of each database and the latest failures.\n\n"
	  "  --failures=N        failures to show (10)\n" CONN_HELP },
	{ "top", ctl_top_command, "show the queues live",
	  "usage: schedqctl top [options]\n"
	  "What status shows, refreshed every second, with the rate of tasks\n"
	  "done per second and a sparkline of it per queue.  q quits.\n\n"
	  "  --interval=SECONDS  refresh interval (1)\n" CONN_HELP },
	{ NULL, NULL, NULL, NULL }
};

static const char *exit_help =
	"Exit status: 0 done; 1 the server refused or something failed; 2 bad\n"
	"command line; 3 no connection; 4 a privilege is missing (the message\n"
	"names the GRANT); 5 nothing to do (cancel, retry, unschedule).\n";

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
		fprintf(out, "  %-11s %s\n", c->name, c->summary);
	fputs("  help        show the help of a command\n\n"
		  "schedqctl help COMMAND, or schedqctl COMMAND --help, for a "
		  "command's options; man schedqctl for all of it.\n\n",
		  out);
	fputs(exit_help, out);
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
