/*-------------------------------------------------------------------------
 * schedqctl/status.c
 *	  schedqctl status: the queues, workers, schedulers and failures.
 *
 *	  status prints them as readable tables: the queues, the workers, the
 *	  scheduler of each database and the latest failures.
 *
 *	  Everything comes from schedq's observability views and functions
 *	  plus two reads of schedq.task (tasks done in the last minute, the
 *	  latest failures), so an admin role as docs/security.md#roles grants
 *	  it sees everything, and another role sees what its row-level security
 *	  lets it count.
 *
 *	  The tables are psql's: fe_utils' printQuery, aligned, without a
 *	  border or a row count (numbers right-aligned by their type, control
 *	  characters shown escaped), each under its title and indented by two
 *	  spaces, "(none)" for no rows.  They are rendered into a buffer, so
 *	  that top (top.c) draws the same ones.  A failure's error is cut to 60
 *	  characters, ending in '~', by the query.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "common/logging.h"
#include "fe_utils/option_utils.h"
#include "fe_utils/print.h"
#include "getopt_long.h"
#include "schedqctl.h"

/* The queries, with what each shows; $1 is the number of failures. */
static const char *const queue_sql =
	"SELECT s.queue, CASE WHEN s.paused THEN 'paused' ELSE '' END AS \" \", "
	"s.pending, s.available, s.running, s.done, s.failed, "
	"s.canceled + s.skipped AS \"canceled\", "
	"COALESCE(round(extract(epoch FROM s.oldest_available_age)::numeric, 1)"
	"::text || 's', '') AS \"oldest available\", "
	"(SELECT count(*) FROM schedq.task t WHERE t.queue = s.queue "
	"AND t.status = 'done' AND t.finished_at > pg_catalog.now() - "
	"interval '1 minute') AS \"done/min\" "
	"FROM schedq.queue_stats s ORDER BY s.queue";

static const char *const worker_sql =
	"SELECT worker, running, claims, "
	"pg_catalog.to_char(last_seen, 'YYYY-MM-DD HH24:MI:SS') AS \"last claim\" "
	"FROM schedq.worker_status "
	"ORDER BY running DESC, last_seen DESC NULLS LAST LIMIT 20";

static const char *const scheduler_sql =
	"SELECT datname AS database, pid, state, "
	"pg_catalog.to_char(last_tick, 'YYYY-MM-DD HH24:MI:SS') AS \"last tick\", "
	"sql_workers AS \"sql workers\", sql_workers_wanted AS wanted "
	"FROM schedq.scheduler_status() ORDER BY datname";

static const char *const failure_sql =
	"SELECT id, queue, kind, attempts, "
	"pg_catalog.to_char(finished_at, 'YYYY-MM-DD HH24:MI:SS') AS finished, "
	"CASE WHEN pg_catalog.length(e) > 60 THEN pg_catalog.left(e, 59) || '~' "
	"ELSE e END AS error "
	"FROM schedq.task, LATERAL (VALUES (pg_catalog.regexp_replace("
	"pg_catalog.left(last_error, 200), '\\s+', ' ', 'g'))) AS x(e) "
	"WHERE status = 'failed' "
	"ORDER BY finished_at DESC LIMIT $1::integer";

/*
 * Render a result as a table under its title into out: printQuery's
 * aligned text, every line indented, without trailing spaces.  "(none)"
 * for no rows.
 */
static void
status_table(PQExpBuffer out, PGresult *res, const char *title, int encoding)
{
	printQueryOpt opt;
	FILE		 *f;
	char		 *text = NULL;
	size_t		  size = 0;

	appendPQExpBuffer(out, "%s\n", title);
	if (PQntuples(res) == 0)
	{
		appendPQExpBufferStr(out, "  (none)\n\n");
		return;
	}
	memset(&opt, 0, sizeof(opt));
	opt.topt.format = PRINT_ALIGNED;
	opt.topt.border = 0;
	opt.topt.start_table = true;
	opt.topt.stop_table = true;
	opt.topt.default_footer = false;
	opt.topt.encoding = encoding;
	f = open_memstream(&text, &size);
	if (f == NULL)
		pg_fatal("could not open a memory stream: %m");
	printQuery(res, &opt, f, false, NULL);
	if (fclose(f) != 0)
		pg_fatal("could not write a table: %m");
	for (const char *p = text; *p;)
	{
		size_t line = strcspn(p, "\n");
		size_t n = line;

		/* Without the spaces that pad the last column. */
		while (n > 0 && p[n - 1] == ' ')
			n--;
		if (n > 0)
			appendPQExpBufferStr(out, "  ");
		appendBinaryPQExpBuffer(out, p, n);
		p += line;
		if (*p == '\n')
		{
			appendPQExpBufferChar(out, '\n');
			p++;
		}
	}
	free(text);
}

/*
 * Render every section of status into out.  Returns the exit code; on an
 * error, out holds what rendered before it.  If queues is not NULL it
 * receives the queue result (the caller clears it).
 */
int
ctl_status_render(PGconn *conn, PQExpBuffer out, int failures,
				  PGresult **queues)
{
	char		nbuf[16];
	const char *values[1] = { nbuf };
	struct
	{
		const char *sql;
		const char *title;
		int			nparams;
	} sections[] = {
		{ queue_sql, "Queues", 0 },
		{ worker_sql, "Workers (from the retained tasks)", 0 },
		{ scheduler_sql, "Schedulers", 0 },
		{ failure_sql, "Latest failures", 1 },
	};

	snprintf(nbuf, sizeof(nbuf), "%d", failures);
	if (queues)
		*queues = NULL;
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
	{
		PGresult *res;
		int		  rc;

		if (failures == 0 && sections[i].nparams == 1)
			continue;
		res = PQexecParams(conn, sections[i].sql, sections[i].nparams, NULL,
						   values, NULL, NULL, 0);
		rc = ctl_conn_check(conn, res, CTL_ROLE_READER, "status");
		if (rc != EXIT_OK)
		{
			PQclear(res);
			return rc;
		}
		status_table(out, res, sections[i].title, PQclientEncoding(conn));
		if (i == 0 && queues)
			*queues = res;
		else
			PQclear(res);
	}
	return EXIT_OK;
}

static const struct option status_options[] = {
	{ "dbname", required_argument, NULL, 'd' },
	{ "help", no_argument, NULL, 'H' },
	{ "failures", required_argument, NULL, 'f' },
	{ NULL, 0, NULL, 0 }
};

/* schedqctl status: print the tables once; returns the exit code. */
int
ctl_status_command(int argc, char **argv)
{
	const char	   *conninfo = NULL;
	int				failures = 10;
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
			default:
				pg_log_error_hint("Try \"schedqctl help status\".");
				return EXIT_USAGE;
		}
	}
	if (optind < argc)
	{
		pg_log_error("status: unexpected argument \"%s\"", argv[optind]);
		return EXIT_USAGE;
	}
	conn = ctl_conn_connect(conninfo, false);
	if (conn == NULL)
		return EXIT_CONNECT;
	initPQExpBuffer(&out);
	rc = ctl_status_render(conn, &out, failures, NULL);
	ctl_text_check(&out);
	fputs(out.data, stdout);
	termPQExpBuffer(&out);
	PQfinish(conn);
	return rc;
}
