/*-------------------------------------------------------------------------
 * schedqctl/top.c
 *	  schedqctl top: what status shows, live, with throughput.
 *
 *	  Every --interval seconds it renders status's tables (status.c),
 *	  fitted to the terminal's width (table.c: narrower gaps, long text
 *	  cut, then the rightmost columns left out), and, above them, one line
 *	  per queue: tasks done per second since the last refresh (the change
 *	  of queue_stats' done count over the time between the two reads) and
 *	  a sparkline of as many of the last 60 refreshes as fit.  What does
 *	  not fit the screen's height scrolls: Up and Down by a line, PgUp and
 *	  PgDn by a screen, Home and End; the last line says which lines show.
 *	  q quits.  Drawing is ncurses's (wide-character build, so the
 *	  sparkline's block characters need a UTF-8 locale; elsewhere it uses
 *	  ASCII).  A key redraws at once; a new terminal size refreshes.  A
 *	  broken connection is shown and retried at each refresh.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <fcntl.h>
#include <langinfo.h>
#include <time.h>
#include <unistd.h>

#include <curses.h>

#include "common/logging.h"
#include "getopt_long.h"
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

/* Seconds on the monotonic clock. */
static double
now_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The rates of a queue, made on first sight (NULL past MAX_QUEUES). */
static QueueRate *
rate_find(QueueRate *rates, int *n, const char *name)
{
	for (int i = 0; i < *n; i++)
		if (strcmp(rates[i].name, name) == 0)
			return &rates[i];
	if (*n >= MAX_QUEUES)
		return NULL;
	memset(&rates[*n], 0, sizeof(QueueRate));
	rates[*n].name = pg_strdup(name);
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
sparkline(PQExpBuffer out, QueueRate *q, bool utf8)
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
			appendPQExpBufferStr(out, blocks[level]);
		else
			appendPQExpBufferChar(out, ascii[level]);
	}
}

/*
 * Draw the lines of text from its line skip on, from row y to row
 * last (exclusive), each clipped to the screen's width at a character
 * boundary.  Returns the number of lines text has.
 */
static int
draw_lines(int y, int last, const char *text, int skip)
{
	int			cols = COLS;
	int			n = 0;
	const char *p = text;

	while (*p)
	{
		size_t len = strcspn(p, "\n");

		if (n >= skip && y < last)
		{
			int	   w = 0;
			size_t cut = 0;

			while (cut < len && w < cols)
			{
				cut++;
				while (cut < len && ((unsigned char) p[cut] & 0xC0) == 0x80)
					cut++;
				w++;
			}
			move(y++, 0);
			addnstr(p, (int) cut);
		}
		n++;
		p += len;
		if (*p == '\n')
			p++;
	}
	return n;
}

/* The state of top between refreshes. */
typedef struct Top
{
	const char	   *conninfo;
	double			interval;
	PGconn		   *conn;
	QueueRate		rates[MAX_QUEUES];
	int				nrates;
	double			last; /* when the rates were last updated, 0 before */
	bool			utf8;
	char			head[256];	  /* the first line */
	char			problem[256]; /* what went wrong at the last refresh */
	PQExpBufferData body;		  /* throughput and tables: scrolled */
	int				scroll;		  /* the body's first line shown */
	int				nlines;		  /* the body's lines */
} Top;

static const struct option top_options[] = {
	{ "dbname", required_argument, NULL, 'd' },
	{ "help", no_argument, NULL, 'H' },
	{ "interval", required_argument, NULL, 'i' },
	{ NULL, 0, NULL, 0 }
};

/*
 * Parse top's options into t.  Returns -1 to go on, or the exit code:
 * EXIT_OK after --help, EXIT_USAGE after a usage error (said).
 */
static int
top_parse_options(int argc, char **argv, Top *t)
{
	int	  c;
	char *end;

	optind = 1;
	while ((c = getopt_long(argc, argv, "d:", top_options, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				t->conninfo = optarg;
				break;
			case 'H':
				ctl_main_usage("top", false);
				return EXIT_OK;
			case 'i':
				t->interval = strtod(optarg, &end);
				if (*end || !(t->interval >= 0.1) || t->interval > 3600)
				{
					pg_log_error("--interval must be in range 0.1..3600");
					return EXIT_USAGE;
				}
				break;
			default:
				pg_log_error_hint("Try \"schedqctl help top\".");
				return EXIT_USAGE;
		}
	}
	if (optind < argc)
	{
		pg_log_error("top: unexpected argument \"%s\"", argv[optind]);
		return EXIT_USAGE;
	}
	return -1;
}

/*
 * Start drawing: stderr goes to /dev/null while the screen is drawn, so
 * that errors of the refreshes do not scribble over it (the screen says
 * what went wrong).  Returns the saved stderr for top_screen_end.
 */
static int
top_screen_start(Top *t)
{
	int saved_stderr = dup(STDERR_FILENO);
	int devnull = open("/dev/null", O_WRONLY);

	if (devnull >= 0)
	{
		dup2(devnull, STDERR_FILENO);
		close(devnull);
	}
	setlocale(LC_ALL, "");
	t->utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
	initscr();
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	return saved_stderr;
}

/* Stop drawing, and give stderr back. */
static void
top_screen_end(int saved_stderr)
{
	endwin();
	if (saved_stderr >= 0)
	{
		dup2(saved_stderr, STDERR_FILENO);
		close(saved_stderr);
	}
}

/*
 * The throughput lines of the queues in queues (queue_stats' rows), the
 * rates updated for the time since the last refresh, into line: a
 * sparkline as long as the screen leaves room for.
 */
static void
top_throughput(Top *t, PGresult *queues, double now, PQExpBuffer line)
{
	int room = COLS - 36;

	rates_update(t->rates, &t->nrates, queues, t->last > 0 ? now - t->last : 0);
	t->last = now;
	appendPQExpBufferStr(line, "Throughput (done/s, last refreshes)\n");
	for (int i = 0; i < t->nrates; i++)
	{
		QueueRate *q = &t->rates[i];
		QueueRate  shown = *q;

		if (!q->seen)
			continue;
		appendPQExpBuffer(line, "  %-20.20s %8.1f/s  ", q->name,
						  q->nrates ? q->rates[q->nrates - 1] : 0.0);
		/* The latest rates that fit. */
		if (room < shown.nrates)
		{
			int drop = shown.nrates - Max(room, 0);

			memmove(shown.rates, shown.rates + drop,
					sizeof(double) * (shown.nrates - drop));
			shown.nrates -= drop;
		}
		sparkline(line, &shown, t->utf8);
		appendPQExpBufferChar(line, '\n');
	}
	appendPQExpBufferChar(line, '\n');
	ctl_text_check(line);
}

/*
 * One refresh: reconnect if need be, and render the head line, what went
 * wrong if anything, and the body (the throughput, status's tables fitted
 * to the screen's width) into t.
 */
static void
top_refresh(Top *t)
{
	PGresult	   *queues = NULL;
	double			now = now_wall();
	time_t			wall = time(NULL);
	struct tm		tm;
	int				rc = EXIT_OK;
	PQExpBufferData tables;

	initPQExpBuffer(&tables);
	if (t->conn == NULL || PQstatus(t->conn) != CONNECTION_OK)
	{
		PQfinish(t->conn);
		t->conn = ctl_conn_connect(t->conninfo, true);
	}
	if (t->conn != NULL)
		rc = ctl_status_render(t->conn, &tables, 5, false, COLS, &queues);
	ctl_text_check(&tables);
	localtime_r(&wall, &tm);
	snprintf(t->head, sizeof(t->head), "schedqctl top  %s@%s  %02d:%02d:%02d",
			 t->conn ? PQdb(t->conn) : "?",
			 t->conn && PQhost(t->conn) ? PQhost(t->conn) : "", tm.tm_hour,
			 tm.tm_min, tm.tm_sec);
	if (t->conn == NULL || rc == EXIT_CONNECT)
		snprintf(t->problem, sizeof(t->problem),
				 "connection lost: retrying every refresh");
	else if (rc != EXIT_OK)
		snprintf(t->problem, sizeof(t->problem),
				 "a query failed (see the server's log)");
	else
		t->problem[0] = '\0';

	/* The last body stays while the server is away. */
	if (queues != NULL)
	{
		resetPQExpBuffer(&t->body);
		top_throughput(t, queues, now, &t->body);
		appendPQExpBufferStr(&t->body, tables.data);
		ctl_text_check(&t->body);
		PQclear(queues);
	}
	termPQExpBuffer(&tables);
}

/*
 * Draw the screen: the head line, the problem (or a blank line), the body
 * from its scrolled line on, and the last line: which lines show, and the
 * keys.
 */
static void
top_draw(Top *t)
{
	int	 page = LINES - 3;
	char foot[256];

	erase();
	draw_lines(0, 1, t->head, 0);
	if (t->problem[0])
		draw_lines(1, 2, t->problem, 0);
	t->nlines = draw_lines(2, 2 + Max(page, 0), t->body.data, t->scroll);
	snprintf(foot, sizeof(foot),
			 "lines %d-%d of %d  Up/Down PgUp/PgDn Home/End scroll  q quits",
			 t->nlines ? t->scroll + 1 : 0,
			 Min(t->scroll + Max(page, 0), t->nlines), t->nlines);
	if (LINES > 1)
		draw_lines(LINES - 1, LINES, foot, 0);
	refresh();
}

/*
 * Take a key: scroll, or say to refresh (a new size) or to quit.  Returns
 * 'q' to quit, 'r' to refresh now, 0 otherwise.
 */
static int
top_key(Top *t, int key)
{
	int page = Max(LINES - 3, 1);
	int max = Max(t->nlines - page, 0);

	switch (key)
	{
		case 'q':
		case 'Q':
			return 'q';
		case KEY_UP:
		case 'k':
			t->scroll--;
			break;
		case KEY_DOWN:
		case 'j':
			t->scroll++;
			break;
		case KEY_PPAGE:
			t->scroll -= page;
			break;
		case KEY_NPAGE:
		case ' ':
			t->scroll += page;
			break;
		case KEY_HOME:
		case 'g':
			t->scroll = 0;
			break;
		case KEY_END:
		case 'G':
			t->scroll = max;
			break;
		case KEY_RESIZE:
			return 'r';
		default:
			break;
	}
	t->scroll = Max(Min(t->scroll, max), 0);
	return 0;
}

/*
 * schedqctl top: draw status's tables and the throughput every interval,
 * scrolled by the keys, until q is pressed.  Returns the exit code.
 */
int
ctl_top_command(int argc, char **argv)
{
	Top	   t;
	int	   rc;
	int	   saved_stderr;
	double next = 0;

	memset(&t, 0, sizeof(t));
	t.interval = 1;
	rc = top_parse_options(argc, argv, &t);
	if (rc >= 0)
		return rc;

	/* Connect first, so that a bad -d is reported before the screen. */
	t.conn = ctl_conn_connect(t.conninfo, false);
	if (t.conn == NULL)
		return EXIT_CONNECT;
	/* A missing privilege is said plainly too, not on the screen. */
	rc = ctl_status_require(t.conn, "top");
	if (rc != EXIT_OK)
	{
		PQfinish(t.conn);
		return rc;
	}

	initPQExpBuffer(&t.body);
	saved_stderr = top_screen_start(&t);
	for (;;)
	{
		double now = now_wall();
		int	   key;

		if (now >= next)
		{
			top_refresh(&t);
			next = now + t.interval;
			/* Keep the scroll within the new body. */
			top_key(&t, 0);
		}
		top_draw(&t);
		/* Wait for a key until the next refresh. */
		timeout(Max((int) ((next - now_wall()) * 1000), 0));
		key = getch();
		if (key == ERR)
			continue;
		key = top_key(&t, key);
		if (key == 'q')
			break;
		if (key == 'r')
			next = 0;
	}
	top_screen_end(saved_stderr);

	termPQExpBuffer(&t.body);
	for (int i = 0; i < t.nrates; i++)
		pg_free(t.rates[i].name);
	PQfinish(t.conn);
	return EXIT_OK;
}
