/*-------------------------------------------------------------------------
 * top.c
 *	  schedqctl top: what status shows, live, with throughput.
 *
 *	  Every --interval seconds it renders status's tables (status.c) and,
 *	  above them, one line per queue: tasks done per second since the last
 *	  refresh (the change of queue_stats' done count over the time between
 *	  the two reads) and a sparkline of the last 60 refreshes.  Drawing is
 *	  ncurses's (wide-character build, so the sparkline's block characters
 *	  need a UTF-8 locale; elsewhere it uses ASCII).  q quits.  A broken
 *	  connection is shown and retried at each refresh.
 *-------------------------------------------------------------------------
 */
#include <fcntl.h>
#include <getopt.h>
#include <langinfo.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curses.h>

#include "schedqctl.h"

#define MAX_QUEUES 64
#define HISTORY	   60

typedef struct QueueRate
{
	char	 *name;
	long long done;			  /* done count at the last refresh */
	double	  rates[HISTORY]; /* oldest first */
	int		  nrates;
	bool	  seen;
} QueueRate;

static double
now_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static QueueRate *
rate_find(QueueRate *rates, int *n, const char *name)
{
	for (int i = 0; i < *n; i++)
		if (strcmp(rates[i].name, name) == 0)
			return &rates[i];
	if (*n >= MAX_QUEUES)
		return NULL;
	memset(&rates[*n], 0, sizeof(QueueRate));
	rates[*n].name = ctl_strdup(name);
	rates[*n].done = -1;
	return &rates[(*n)++];
}

/* Update the rates from queue_stats' rows (columns: queue, ..., done at 5). */
static void
rates_update(QueueRate *rates, int *n, PGresult *res, double dt)
{
	for (int i = 0; i < *n; i++)
		rates[i].seen = false;
	for (int r = 0; r < PQntuples(res); r++)
	{
		QueueRate *q = rate_find(rates, n, PQgetvalue(res, r, 0));
		long long  done = atoll(PQgetvalue(res, r, 5));
		double	   rate;

		if (q == NULL)
			continue;
		q->seen = true;
		/* Retention deletes done tasks: never a negative rate. */
		rate = (q->done < 0 || dt <= 0 || done < q->done) ?
				   0 :
				   (done - q->done) / dt;
		q->done = done;
		if (q->nrates == HISTORY)
		{
			memmove(q->rates, q->rates + 1, sizeof(double) * (HISTORY - 1));
			q->nrates--;
		}
		q->rates[q->nrates++] = rate;
	}
}

/* The sparkline of a queue's rates, scaled to its own maximum. */
static void
sparkline(CtlBuf *out, QueueRate *q, bool utf8)
{
	static const char *const blocks[] = { " ",		"\u2581", "\u2582",
										  "\u2583", "\u2584", "\u2585",
										  "\u2586", "\u2587", "\u2588" };
	static const char		 ascii[] = " ._-=+*#@";
	double					 max = 0;

	for (int i = 0; i < q->nrates; i++)
		if (q->rates[i] > max)
			max = q->rates[i];
	for (int i = 0; i < q->nrates; i++)
	{
		int level = max > 0 ? (int) (q->rates[i] / max * 8 + 0.5) : 0;

		if (q->rates[i] > 0 && level == 0)
			level = 1;
		if (utf8)
			ctl_buf_appends(out, blocks[level]);
		else
			ctl_buf_append(out, &ascii[level], 1);
	}
}

/* Draw text from row y on, one line per line, clipped to the screen. */
static int
draw_lines(int y, const char *text)
{
	int			rows = LINES;
	int			cols = COLS;
	const char *p = text;

	while (*p && y < rows)
	{
		size_t len = strcspn(p, "\n");
		int	   w = 0;
		size_t cut = 0;

		/* Clip to the screen's width, at a character boundary. */
		while (cut < len && w < cols)
		{
			cut++;
			while (cut < len && ((unsigned char) p[cut] & 0xC0) == 0x80)
				cut++;
			w++;
		}
		move(y, 0);
		addnstr(p, (int) cut);
		y++;
		p += len;
		if (*p == '\n')
			p++;
	}
	return y;
}

static const struct option top_options[] = {
	{ "dbname", required_argument, NULL, 'd' },
	{ "help", no_argument, NULL, 'H' },
	{ "interval", required_argument, NULL, 'i' },
	{ NULL, 0, NULL, 0 }
};

int
ctl_cmd_top(int argc, char **argv)
{
	const char *conninfo = NULL;
	double		interval = 1;
	int			c;
	char	   *end;
	PGconn	   *conn;
	QueueRate	rates[MAX_QUEUES];
	int			nrates = 0;
	double		last = 0;
	bool		utf8;
	CtlBuf		out;
	int			rc = EXIT_OK;
	int			saved_stderr;

	optind = 1;
	while ((c = getopt_long(argc, argv, "d:", top_options, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				conninfo = optarg;
				break;
			case 'H':
				ctl_usage("top", false);
				return EXIT_OK;
			case 'i':
				interval = strtod(optarg, &end);
				if (*end || !(interval >= 0.1) || interval > 3600)
				{
					ctl_error("top: --interval must be 0.1 to 3600 seconds");
					return EXIT_USAGE;
				}
				break;
			default:
				fprintf(stderr, "Try \"schedqctl help top\".\n");
				return EXIT_USAGE;
		}
	}
	if (optind < argc)
	{
		ctl_error("top: unexpected argument \"%s\"", argv[optind]);
		return EXIT_USAGE;
	}

	/* Connect first, so that a bad -d is reported before the screen. */
	conn = ctl_connect(conninfo, false);
	if (conn == NULL)
		return EXIT_CONNECT;
	{
		/* A missing privilege is said plainly too, not on the screen. */
		PGresult *res;

		ctl_buf_init(&out);
		rc = ctl_render_status(conn, &out, 0, &res);
		PQclear(res);
		if (rc != EXIT_OK)
		{
			ctl_buf_free(&out);
			PQfinish(conn);
			return rc;
		}
	}

	/*
	 * Errors of the refreshes must not scribble over the screen: stderr goes
	 * to /dev/null while it is drawn (the screen says what went wrong).
	 */
	saved_stderr = dup(STDERR_FILENO);
	{
		int devnull = open("/dev/null", O_WRONLY);

		if (devnull >= 0)
		{
			dup2(devnull, STDERR_FILENO);
			close(devnull);
		}
	}
	setlocale(LC_ALL, "");
	utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
	initscr();
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	timeout((int) (interval * 1000));

	for (;;)
	{
		PGresult *queues = NULL;
		double	  now = now_wall();
		char	  head[256];
		time_t	  t = time(NULL);
		struct tm tm;
		int		  y;
		int		  key;

		ctl_buf_reset(&out);
		if (conn == NULL || PQstatus(conn) != CONNECTION_OK)
		{
			PQfinish(conn);
			conn = ctl_connect(conninfo, true);
		}
		if (conn != NULL)
			rc = ctl_render_status(conn, &out, 5, &queues);
		localtime_r(&t, &tm);
		snprintf(head, sizeof(head),
				 "schedqctl top  %s@%s  %02d:%02d:%02d  (q quits)",
				 conn ? PQdb(conn) : "?",
				 conn && PQhost(conn) ? PQhost(conn) : "", tm.tm_hour,
				 tm.tm_min, tm.tm_sec);

		erase();
		y = draw_lines(0, head);
		y++;
		if (conn == NULL || rc == EXIT_CONNECT)
			y = draw_lines(y, "connection lost: retrying every refresh\n");
		else if (rc != EXIT_OK)
			y = draw_lines(y, "a query failed (see the server's log)\n");
		if (queues != NULL)
		{
			CtlBuf line;

			rates_update(rates, &nrates, queues, last > 0 ? now - last : 0);
			last = now;
			ctl_buf_init(&line);
			ctl_buf_appends(&line, "Throughput (done/s, last 60 refreshes)\n");
			for (int i = 0; i < nrates; i++)
			{
				QueueRate *q = &rates[i];

				if (!q->seen)
					continue;
				ctl_buf_printf(&line, "  %-20.20s %8.1f/s  ", q->name,
							   q->nrates ? q->rates[q->nrates - 1] : 0.0);
				sparkline(&line, q, utf8);
				ctl_buf_appends(&line, "\n");
			}
			ctl_buf_appends(&line, "\n");
			y = draw_lines(y, line.data);
			ctl_buf_free(&line);
			PQclear(queues);
		}
		draw_lines(y, out.data);
		refresh();

		/* Wait for a key until the next refresh. */
		key = getch();
		if (key == 'q' || key == 'Q')
			break;
	}
	endwin();
	if (saved_stderr >= 0)
	{
		dup2(saved_stderr, STDERR_FILENO);
		close(saved_stderr);
	}
	ctl_buf_free(&out);
	for (int i = 0; i < nrates; i++)
		free(rates[i].name);
	PQfinish(conn);
	return EXIT_OK;
}
