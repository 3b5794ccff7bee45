/*-------------------------------------------------------------------------
 * status.c
 *	  schedqctl status: the queues, the workers, the scheduler of each
 *	  database and the latest failures, as readable tables.
 *
 *	  Everything comes from schedq's observability views and functions
 *	  (README, "Observability") plus two reads of schedq.task (tasks done
 *	  in the last minute, the latest failures), so an admin role as the
 *	  README grants it sees everything, and another role sees what its
 *	  row-level security lets it count.  The tables are rendered into a
 *	  buffer, line by line, so that top (top.c) draws the same ones.
 *-------------------------------------------------------------------------
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	"pg_catalog.regexp_replace(pg_catalog.left(last_error, 200), "
	"'\\s+', ' ', 'g') AS error "
	"FROM schedq.task WHERE status = 'failed' "
	"ORDER BY finished_at DESC LIMIT $1::integer";

/* Whether a column holds numbers (right-aligned). */
static bool
column_numeric(PGresult *res, int col)
{
	Oid type = PQftype(res, col);

	/* int2, int4, int8, float4, float8, numeric */
	return type == 21 || type == 23 || type == 20 || type == 700 ||
		   type == 701 || type == 1700;
}

/* Display width of UTF-8 text: one column per character. */
static int
text_width(const char *s)
{
	int w = 0;

	for (; *s; s++)
		if (((unsigned char) *s & 0xC0) != 0x80)
			w++;
	return w;
}

/* Append s padded to width, truncated to max columns. */
static void
append_cell(CtlBuf *out, const char *s, int width, bool right)
{
	int	 w = text_width(s);
	char cell[256];

	if (w > width)
	{
		/* Cut at a character boundary. */
		int	   cols = 0;
		size_t i = 0;

		while (s[i] && cols < width - 1 && i < sizeof(cell) - 4)
		{
			i++;
			while (s[i] && ((unsigned char) s[i] & 0xC0) == 0x80)
				i++;
			cols++;
		}
		memcpy(cell, s, i);
		cell[i] = '~';
		cell[i + 1] = '\0';
		s = cell;
		w = cols + 1;
	}
	if (right)
		for (int i = w; i < width; i++)
			ctl_buf_appends(out, " ");
	ctl_buf_appends(out, s);
	if (!right)
		for (int i = w; i < width; i++)
			ctl_buf_appends(out, " ");
}

/*
 * Render a result as a table under a title: column names, a rule, one
 * line per row (control characters in values shown as '?').  "(none)"
 * for no rows.
 */
void
ctl_render_table(CtlBuf *out, PGresult *res, const char *title)
{
	int	 ncols = PQnfields(res);
	int	 nrows = PQntuples(res);
	int *width = ctl_malloc(sizeof(int) * (ncols ? ncols : 1));

	ctl_buf_printf(out, "%s\n", title);
	for (int c = 0; c < ncols; c++)
	{
		width[c] = text_width(PQfname(res, c));
		for (int r = 0; r < nrows; r++)
		{
			int w = text_width(PQgetvalue(res, r, c));

			if (w > width[c])
				width[c] = w;
		}
		if (width[c] > 60)
			width[c] = 60;
	}
	if (nrows == 0)
	{
		ctl_buf_appends(out, "  (none)\n\n");
		free(width);
		return;
	}
	ctl_buf_appends(out, "  ");
	for (int c = 0; c < ncols; c++)
	{
		append_cell(out, PQfname(res, c), width[c], column_numeric(res, c));
		ctl_buf_appends(out, c + 1 < ncols ? "  " : "\n");
	}
	ctl_buf_appends(out, "  ");
	for (int c = 0; c < ncols; c++)
	{
		for (int i = 0; i < width[c]; i++)
			ctl_buf_appends(out, "-");
		ctl_buf_appends(out, c + 1 < ncols ? "  " : "\n");
	}
	for (int r = 0; r < nrows; r++)
	{
		ctl_buf_appends(out, "  ");
		for (int c = 0; c < ncols; c++)
		{
			char *v = ctl_strdup(PQgetvalue(res, r, c));

			for (char *p = v; *p; p++)
				if ((unsigned char) *p < 0x20 || *p == 0x7f)
					*p = '?';
			append_cell(out, v, width[c], column_numeric(res, c));
			free(v);
			ctl_buf_appends(out, c + 1 < ncols ? "  " : "\n");
		}
	}
	ctl_buf_appends(out, "\n");
	free(width);
}

/*
 * Render every section of status into out.  Returns the exit code; on an
 * error, out holds what rendered before it.  If queues is not NULL it
 * receives the queue result (the caller clears it).
 */
int
ctl_render_status(PGconn *conn, CtlBuf *out, int failures, PGresult **queues)
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
		res = ctl_exec(conn, sections[i].sql, sections[i].nparams, values);
		rc = ctl_result_status(conn, res, CTL_ROLE_READER, "status");
		if (rc != EXIT_OK)
		{
			PQclear(res);
			return rc;
		}
		ctl_render_table(out, res, sections[i].title);
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

int
ctl_cmd_status(int argc, char **argv)
{
	const char *conninfo = NULL;
	int			failures = 10;
	int			c;
	char	   *end;
	PGconn	   *conn;
	CtlBuf		out;
	int			rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "d:", status_options, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				conninfo = optarg;
				break;
			case 'H':
				ctl_usage("status", false);
				return EXIT_OK;
			case 'f':
				failures = (int) strtol(optarg, &end, 10);
				if (*end || failures < 0 || failures > 1000)
				{
					ctl_error("status: --failures must be 0 to 1000");
					return EXIT_USAGE;
				}
				break;
			default:
				fprintf(stderr, "Try \"schedqctl help status\".\n");
				return EXIT_USAGE;
		}
	}
	if (optind < argc)
	{
		ctl_error("status: unexpected argument \"%s\"", argv[optind]);
		return EXIT_USAGE;
	}
	conn = ctl_connect(conninfo, false);
	if (conn == NULL)
		return EXIT_CONNECT;
	ctl_buf_init(&out);
	rc = ctl_render_status(conn, &out, failures, NULL);
	fputs(out.data, stdout);
	ctl_buf_free(&out);
	PQfinish(conn);
	return rc;
}
