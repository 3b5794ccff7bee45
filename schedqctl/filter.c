/*-------------------------------------------------------------------------
 * schedqctl/filter.c
 *	  list, cancel and retry: tasks by id, or by a filter.
 *
 *	  A filter selects tasks of schedq.task by --queue, --kind, --status
 *	  (a comma list), --run and --older-than (created more than an
 *	  interval ago), at most --limit of them.  It is one fixed query whose
 *	  parameters are NULL for what was not given; row-level security keeps
 *	  each role to the tasks it may see.
 *
 *	  list prints them, newest first.  cancel and retry take one id, or a
 *	  filter: then they call schedq.cancel or schedq.retry for each task it
 *	  selects, in id order, in one statement (SELECT schedq.retry(id) FROM
 *	  schedq.task WHERE ...), so that the function's own checks apply to
 *	  each task and the whole is one transaction: all of them or, on an
 *	  error, none.  A bulk command needs a filter, or --all to mean every
 *	  task: without either it is a usage error, so that a bare `retry` can
 *	  never touch everything.  retry with a filter but no --status retries
 *	  failed tasks (done, canceled or skipped ones only when --status names
 *	  them); cancel's default is every live status.  --dry-run counts what
 *	  would change and changes nothing.  Nothing changed: exit 5.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <limits.h>

#include "common/logging.h"
#include "fe_utils/option_utils.h"
#include "getopt_long.h"
#include "schedqctl.h"

/* The selection, $1 to $6: queue, kind, statuses, run, age, limit. */
#define FILTER_SQL                                                             \
	" FROM schedq.task WHERE ($1::text IS NULL OR queue = $1::text)"           \
	" AND ($2::text IS NULL OR kind = $2::text)"                               \
	" AND ($3::text[] IS NULL OR status = ANY ($3::text[]))"                   \
	" AND ($4::bigint IS NULL OR run_id = $4::bigint)"                         \
	" AND ($5::interval IS NULL OR created_at < pg_catalog.now() - "           \
	"$5::interval)"

static const char *const list_sql =
	"SELECT id, queue, kind, status, attempts, "
	"pg_catalog.to_char(created_at, 'YYYY-MM-DD HH24:MI:SS') AS created, "
	"pg_catalog.to_char(finished_at, 'YYYY-MM-DD HH24:MI:SS') AS finished, "
	"CASE WHEN pg_catalog.length(e) > 40 THEN pg_catalog.left(e, 39) || '~' "
	"ELSE e END AS error "
	"FROM (SELECT *, pg_catalog.regexp_replace(pg_catalog.left(last_error, "
	"200), '\\s+', ' ', 'g') AS e" FILTER_SQL
	" ORDER BY id DESC LIMIT $6::bigint) AS t ORDER BY id DESC";

/*
 * Each selected task through the function (the %s), in id order; the
 * count of tasks selected and of those it changed.
 */
#define BULK_SQL(function)                                                     \
	"SELECT count(*), count(*) FILTER (WHERE r) FROM (SELECT schedq." function \
	"(s.id) AS r FROM (SELECT id" FILTER_SQL                                   \
	" ORDER BY id LIMIT $6::bigint) AS s) AS x"

/* --dry-run: the count of tasks selected and of those in $7's statuses. */
static const char *const dry_sql =
	"SELECT count(*), count(*) FILTER (WHERE status = ANY ($7::text[])) "
	"FROM (SELECT id, status" FILTER_SQL " ORDER BY id LIMIT $6::bigint) AS s";

static const char *const statuses[] = { "pending", "available", "running",
										"done",	   "failed",	"canceled",
										"skipped" };

/* A filter, as given, and what the command does with it. */
typedef struct Filter
{
	const char *conninfo;
	const char *values[7]; /* the parameters of FILTER_SQL and dry_sql */
	char	   *status;	   /* $3, a text[] literal */
	char		limit[24];
	bool		all;
	bool		dry_run;
	bool		given; /* a filter narrows the selection */
} Filter;

enum
{
	OPT_QUEUE = 256,
	OPT_KIND,
	OPT_STATUS,
	OPT_RUN,
	OPT_OLDER_THAN,
	OPT_LIMIT,
	OPT_ALL,
	OPT_DRY_RUN
};

static const struct option filter_options[] = {
	{ "dbname", required_argument, NULL, 'd' },
	{ "help", no_argument, NULL, 'H' },
	{ "queue", required_argument, NULL, OPT_QUEUE },
	{ "kind", required_argument, NULL, OPT_KIND },
	{ "status", required_argument, NULL, OPT_STATUS },
	{ "run", required_argument, NULL, OPT_RUN },
	{ "older-than", required_argument, NULL, OPT_OLDER_THAN },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "all", no_argument, NULL, OPT_ALL },
	{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
	{ NULL, 0, NULL, 0 }
};

/* --status S1,S2: each a status of schedq.task, as a text[] literal. */
static bool
filter_statuses(Filter *f, const char *list)
{
	char *copy = pg_strdup(list);
	bool  ok = true;

	for (char *s = strtok(copy, ","); s && ok; s = strtok(NULL, ","))
	{
		ok = false;
		for (size_t i = 0; i < lengthof(statuses); i++)
			ok = ok || strcmp(s, statuses[i]) == 0;
		if (!ok)
			pg_log_error("--status: \"%s\" is not a status (pending, "
						 "available, running, done, failed, canceled, "
						 "skipped)",
						 s);
	}
	pg_free(copy);
	if (ok)
	{
		pg_free(f->status);
		f->status = ctl_text_list_array(list);
		f->values[2] = f->status;
	}
	return ok;
}

/*
 * Parse a command's options into f.  Returns the index of the first
 * positional argument, -1 after a usage error (said), or -2 after --help
 * (printed).  bulk: --all and --dry-run are taken.
 */
static int
filter_parse(const char *command, int argc, char **argv, Filter *f, bool bulk)
{
	int c;
	int limit;

	memset(f, 0, sizeof(*f));
	optind = 1;
	while ((c = getopt_long(argc, argv, "d:", filter_options, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				f->conninfo = optarg;
				break;
			case 'H':
				ctl_main_usage(command, false);
				return -2;
			case OPT_QUEUE:
				f->values[0] = optarg;
				f->given = true;
				break;
			case OPT_KIND:
				f->values[1] = optarg;
				f->given = true;
				break;
			case OPT_STATUS:
				if (!filter_statuses(f, optarg))
					return -1;
				f->given = true;
				break;
			case OPT_RUN:
				if (!ctl_check_id(optarg, "--run"))
					return -1;
				f->values[3] = optarg;
				f->given = true;
				break;
			case OPT_OLDER_THAN:
				if (!ctl_check_interval_unit(optarg, "--older-than"))
					return -1;
				f->values[4] = optarg;
				f->given = true;
				break;
			case OPT_LIMIT:
				if (!option_parse_int(optarg, "--limit", 1, INT_MAX, &limit))
					return -1;
				snprintf(f->limit, sizeof(f->limit), "%d", limit);
				f->values[5] = f->limit;
				break;
			case OPT_ALL:
			case OPT_DRY_RUN:
				if (!bulk)
				{
					ctl_main_usage_error(command,
										 "--%s is an option of "
										 "cancel and retry",
										 c == OPT_ALL ? "all" : "dry-run");
					return -1;
				}
				if (c == OPT_ALL)
					f->all = true;
				else
					f->dry_run = true;
				break;
			default:
				ctl_main_usage_error(command, NULL);
				return -1;
		}
	}
	return optind;
}

/*
 * Connect, check that the role may read the tasks and call function (NULL:
 * none), and cast --older-than on the server.  Returns the connection, or
 * NULL with *rc set.
 */
static PGconn *
filter_connect(Filter *f, const char *function, int *rc)
{
	CtlNeeds needs = ctl_privs_reader;
	PGconn	*conn = ctl_conn_connect(f->conninfo, false);

	*rc = EXIT_CONNECT;
	if (conn == NULL)
		return NULL;
	if (function)
		needs.objects[2] = function;
	*rc = ctl_privs_require(conn, &needs, function ? function + 2 : "list");
	if (*rc == EXIT_OK && f->values[4])
		*rc = ctl_check_cast(conn, f->values[4], "interval", "--older-than");
	if (*rc != EXIT_OK)
	{
		PQfinish(conn);
		return NULL;
	}
	return conn;
}

/* schedqctl list [filters]: the tasks a filter selects, newest first. */
int
ctl_filter_list(int argc, char **argv)
{
	Filter			f;
	int				first = filter_parse("list", argc, argv, &f, false);
	PGconn		   *conn;
	PGresult	   *res;
	PQExpBufferData out;
	int				rc;

	if (first < 0)
		return first == -2 ? EXIT_OK : EXIT_USAGE;
	if (first < argc)
		return ctl_main_usage_error("list", "unexpected argument \"%s\"",
									argv[first]);
	if (f.values[5] == NULL)
		f.values[5] = "50";
	conn = filter_connect(&f, NULL, &rc);
	if (conn == NULL)
		return rc;
	res = PQexecParams(conn, list_sql, 6, NULL, f.values, NULL, NULL, 0);
	rc = ctl_conn_check(conn, res, &ctl_privs_reader, "list");
	if (rc == EXIT_OK)
	{
		initPQExpBuffer(&out);
		ctl_table_render(&out, res, NULL, PQclientEncoding(conn));
		fputs(out.data, stdout);
		termPQExpBuffer(&out);
	}
	PQclear(res);
	PQfinish(conn);
	pg_free(f.status);
	return rc;
}

/* cancel ID or retry ID: one call, exit 5 when it changed nothing. */
static int
filter_one(Filter *f, const char *command, const char *id)
{
	char		sql[64];
	char		fname[32];
	const char *values[1] = { id };
	CtlNeeds	needs;
	PGconn	   *conn;
	PGresult   *res;
	int			rc;

	if (!ctl_check_id(id, command))
		return EXIT_USAGE;
	conn = ctl_conn_connect(f->conninfo, false);
	if (conn == NULL)
		return EXIT_CONNECT;
	snprintf(sql, sizeof(sql), "SELECT schedq.%s($1::bigint)", command);
	snprintf(fname, sizeof(fname), "f:%s", command);
	needs = ctl_privs_function(CTL_ROLE_SUBMITTER, fname);
	res = PQexecParams(conn, sql, 1, NULL, values, NULL, NULL, 0);
	rc = ctl_conn_check(conn, res, &needs, command);
	if (rc == EXIT_OK && strcmp(PQgetvalue(res, 0, 0), "t") != 0)
	{
		if (strcmp(command, "cancel") == 0)
			pg_log_error("task %s was not canceled: it has finished, or is "
						 "not a task of this role",
						 id);
		else
			pg_log_error("task %s was not retried: it has not finished, or "
						 "is not a task of this role",
						 id);
		rc = EXIT_NO_EFFECT;
	}
	PQclear(res);
	PQfinish(conn);
	return rc;
}

/*
 * cancel or retry of the tasks a filter selects (see the header).  Prints
 * how many changed, of how many selected.
 */
static int
filter_bulk(Filter *f, const char *command)
{
	bool		retry = strcmp(command, "retry") == 0;
	const char *past = retry ? "retried" : "canceled";
	PGconn	   *conn;
	PGresult   *res;
	long		matched;
	long		changed;
	int			rc;

	/* retry: failed tasks, cancel: live ones, unless --status says. */
	if (f->values[2] == NULL)
		f->values[2] = retry ? "{failed}" : "{pending,available,running}";
	f->values[6] = retry ? "{done,failed,canceled,skipped}" :
						   "{pending,available,running}";
	conn = filter_connect(f, retry ? "f:retry" : "f:cancel", &rc);
	if (conn == NULL)
		return rc;
	if (f->dry_run)
		res = PQexecParams(conn, dry_sql, 7, NULL, f->values, NULL, NULL, 0);
	else
		res = PQexecParams(conn, retry ? BULK_SQL("retry") : BULK_SQL("cancel"),
						   6, NULL, f->values, NULL, NULL, 0);
	rc = ctl_conn_check(conn, res, &ctl_privs_reader, command);
	if (rc == EXIT_OK)
	{
		matched = atol(PQgetvalue(res, 0, 0));
		changed = atol(PQgetvalue(res, 0, 1));
		printf("%s%s %ld of %ld selected task%s\n",
			   f->dry_run ? "would have " : "", past, changed, matched,
			   matched == 1 ? "" : "s");
		if (changed == 0)
		{
			pg_log_error("%s: no task was %s", command, past);
			rc = EXIT_NO_EFFECT;
		}
	}
	PQclear(res);
	PQfinish(conn);
	return rc;
}

/* cancel and retry: of one id, or of the tasks a filter selects. */
static int
filter_command(int argc, char **argv, const char *command)
{
	Filter f;
	int	   first = filter_parse(command, argc, argv, &f, true);
	int	   rc;

	if (first < 0)
		return first == -2 ? EXIT_OK : EXIT_USAGE;
	if (argc - first > 1)
		rc = ctl_main_usage_error(command, "at most one task ID expected");
	else if (argc - first == 1 &&
			 (f.given || f.all || f.dry_run || f.values[5] != NULL))
		rc = ctl_main_usage_error(command, "give a task ID or filters, not "
										   "both");
	else if (argc - first == 1)
		rc = filter_one(&f, command, argv[first]);
	else if (!f.given && !f.all)
		rc = ctl_main_usage_error(command,
								  "give a task ID, or filters (--queue, "
								  "--kind, --status, --run, --older-than), or "
								  "--all for every task");
	else
		rc = filter_bulk(&f, command);
	pg_free(f.status);
	return rc;
}

/* schedqctl cancel ID | cancel FILTERS. */
int
ctl_filter_cancel(int argc, char **argv)
{
	return filter_command(argc, argv, "cancel");
}

/* schedqctl retry ID | retry FILTERS. */
int
ctl_filter_retry(int argc, char **argv)
{
	return filter_command(argc, argv, "retry");
}
