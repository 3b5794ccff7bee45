/*-------------------------------------------------------------------------
 * schedqctl/workeropts.c
 *	  The worker's options, their checks and their defaults.
 *
 *	  Options end at the command: getopt_long runs with "+", so that
 *	  `schedqctl worker --queue q -- prog --queue x` leaves prog's own
 *	  options alone.  Numbers are checked here (fe_utils' option_parse_int
 *	  for the integers), with the limits of --help; values the server
 *	  checks (--lease, --queue, --caps) are passed as they are, as
 *	  parameters, and a first claim they make fail ends the worker
 *	  (workerclaim.c).  --queue and --caps become the text[] literals the
 *	  queries take.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <unistd.h>

#include "common/logging.h"
#include "fe_utils/option_utils.h"
#include "getopt_long.h"
#include "worker.h"

static const struct option worker_options[] = {
	{ "dbname", required_argument, NULL, 'd' },
	{ "help", no_argument, NULL, 'H' },
	{ "queue", required_argument, NULL, 'q' },
	{ "caps", required_argument, NULL, 'c' },
	{ "concurrency", required_argument, NULL, 'n' },
	{ "lease", required_argument, NULL, 'l' },
	{ "grace", required_argument, NULL, 'g' },
	{ "name", required_argument, NULL, 'N' },
	{ "wait", required_argument, NULL, 'w' },
	{ "json", no_argument, NULL, 'j' },
	{ NULL, 0, NULL, 0 }
};

/* The default worker name: schedqctl@HOST:PID. */
static void
default_name(Worker *w)
{
	char host[200];

	if (gethostname(host, sizeof(host)) != 0)
		strcpy(host, "localhost");
	host[sizeof(host) - 1] = '\0';
	snprintf(w->name, sizeof(w->name), "schedqctl@%s:%d", host, (int) getpid());
}

/*
 * Parse the worker's options and command into w.  Returns -1 to go on, or
 * the exit code: EXIT_OK after --help, EXIT_USAGE after a usage error
 * (said).
 */
int
ctl_workeropts_parse(int argc, char **argv, Worker *w)
{
	PQExpBufferData queues;
	int				c;
	char		   *end;

	w->concurrency = 1;
	w->grace = 30;
	w->wait_s = 5;
	initPQExpBuffer(&queues);
	appendPQExpBufferChar(&queues, '{');

	optind = 1;
	/* "+": options end at the command, whose own options are its own. */
	while ((c = getopt_long(argc, argv, "+d:q:n:", worker_options, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				w->conninfo = optarg;
				break;
			case 'H':
				ctl_main_usage("worker", false);
				return EXIT_OK;
			case 'q':
				ctl_text_array_add(&queues, optarg);
				break;
			case 'c':
				pg_free(w->caps_param);
				w->caps_param = ctl_text_list_array(optarg);
				break;
			case 'n':
				if (!option_parse_int(optarg, "--concurrency", 1,
									  MAX_CONCURRENCY, &w->concurrency))
					return EXIT_USAGE;
				break;
			case 'l':
				if (!ctl_check_interval_unit(optarg, "--lease"))
					return EXIT_USAGE;
				w->lease = optarg;
				break;
			case 'g':
				w->grace = strtod(optarg, &end);
				if (*end || !(w->grace >= 0) || w->grace > 86400)
				{
					pg_log_error("--grace must be in range 0..86400");
					return EXIT_USAGE;
				}
				break;
			case 'N':
				snprintf(w->name, sizeof(w->name), "%s", optarg);
				break;
			case 'w':
				if (!option_parse_int(optarg, "--wait", 1, 3600, &w->wait_s))
					return EXIT_USAGE;
				break;
			case 'j':
				w->json = true;
				break;
			default:
				pg_log_error_hint("Try \"schedqctl help worker\".");
				return EXIT_USAGE;
		}
	}
	if (optind >= argc)
	{
		pg_log_error("worker: no command given (schedqctl worker [options] "
					 "-- COMMAND [ARGS...])");
		return EXIT_USAGE;
	}
	w->cmd = argv + optind;

	appendPQExpBufferChar(&queues, '}');
	ctl_text_check(&queues);
	if (queues.len > 2)
		w->queues_param = queues.data;
	else
		termPQExpBuffer(&queues);
	if (w->caps_param == NULL)
		w->caps_param = pg_strdup("{}");
	snprintf(w->wait, sizeof(w->wait), "%d seconds", w->wait_s);
	if (w->name[0] == '\0')
		default_name(w);
	return -1;
}
