/*
 * test/bench/consumer.c -- a minimal queue consumer for test/bench/scheduler.sh
 *
 * One libpq connection that claims tasks in a loop and completes them,
 * with one of three ways of waiting when the queue is empty:
 *
 *   block    the claim statement waits by itself (schedq.claim(wait => ...));
 *            the client just runs it again
 *   notify   LISTEN on a channel; after a claim that found nothing, sleep in
 *            poll(2) on the connection's socket until a notification comes
 *   poll     after a claim that found nothing, sleep a fixed time
 *   await    after a claim that found nothing, run -w WAIT_SQL (e.g.
 *            CALL schedq.await_task(wait => '500 ms'), which waits holding
 *            no snapshot), then claim again
 *
 * The claim statement gets one int4 parameter, $1: how many times the
 * client waited (notification waits or poll sleeps) since its previous
 * claim; it may use it or not.  Its first column is collected from every
 * row it returns, and the complete statement gets them as one text[]
 * parameter, $1.  With no row, nothing is completed.
 *
 * Stops after claiming -n tasks (0: no limit), or when nothing was claimed
 * for -i milliseconds.  Prints "ready" on stderr once connected (and
 * listening), and "claimed N empty M" on stdout at the end.
 * Exit status: 0 when -n tasks were claimed (or -n 0), 3 when it stopped
 * idle short of -n, 1 on any error.
 *
 *   consumer -d CONNINFO -m block|notify|poll|await -c CLAIM_SQL -f COMPLETE_SQL
 *            [-n TASKS] [-i IDLE_MS] [-l CHANNEL] [-p POLL_MS] [-w WAIT_SQL]
 *
 * Built by scheduler.sh with: cc -O2 -I$(pg_config --includedir)
 *                                 consumer.c -L$(pg_config --libdir) -lpq
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#define INT4OID 23
#define TEXTARRAYOID 1009

static PGconn *conn;

static void
fail(const char *what, PGresult *res)
{
	fprintf(stderr, "consumer: %s: %s", what,
			res ? PQresultErrorMessage(res) : PQerrorMessage(conn));
	if (res)
		PQclear(res);
	PQfinish(conn);
	exit(1);
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

/* Append s to buf as an element of a text[] literal, always quoted. */
static void
append_elem(char **buf, size_t *len, size_t *cap, const char *s)
{
	size_t		need = *len + 2 * strlen(s) + 4;

	if (need > *cap)
	{
		*cap = need * 2;
		*buf = realloc(*buf, *cap);
		if (*buf == NULL)
		{
			perror("consumer: realloc");
			exit(1);
		}
	}
	if (*len > 1)
		(*buf)[(*len)++] = ',';
	(*buf)[(*len)++] = '"';
	for (; *s; s++)
	{
		if (*s == '"' || *s == '\\')
			(*buf)[(*len)++] = '\\';
		(*buf)[(*len)++] = *s;
	}
	(*buf)[(*len)++] = '"';
	(*buf)[*len] = '\0';
}

/* Wait up to ms milliseconds for a notification; true if one came. */
static int
wait_notify(double ms)
{
	PGnotify   *n;
	int			got = 0;
	struct pollfd pfd;

	for (;;)
	{
		if (!PQconsumeInput(conn))
			fail("reading notifications", NULL);
		while ((n = PQnotifies(conn)) != NULL)
		{
			got = 1;
			PQfreemem(n);
		}
		if (got || ms <= 0)
			return got;
		pfd.fd = PQsocket(conn);
		pfd.events = POLLIN;
		pfd.revents = 0;
		{
			double		t0 = now_ms();
			int			rc = poll(&pfd, 1, (int) (ms + 0.999));

			if (rc < 0 && errno != EINTR)
			{
				perror("consumer: poll");
				exit(1);
			}
			if (rc == 0)
				return 0;
			ms -= now_ms() - t0;
			if (ms < 0)
				ms = 0;
		}
	}
}

int
main(int argc, char **argv)
{
	const char *conninfo = NULL;
	const char *mode = "block";
	const char *claim_sql = NULL;
	const char *complete_sql = NULL;
	const char *channel = NULL;
	const char *wait_sql = NULL;
	long		target = 0;
	double		idle_ms = 10000;
	double		poll_ms = 10;
	long		claimed = 0;
	long		empty = 0;
	int			waits = 0;
	double		last_claim;
	int			opt;
	char	   *arr = NULL;
	size_t		arrcap = 0;

	while ((opt = getopt(argc, argv, "d:m:c:f:n:i:l:p:w:")) != -1)
	{
		switch (opt)
		{
			case 'd': conninfo = optarg; break;
			case 'm': mode = optarg; break;
			case 'c': claim_sql = optarg; break;
			case 'f': complete_sql = optarg; break;
			case 'n': target = atol(optarg); break;
			case 'i': idle_ms = atof(optarg); break;
			case 'l': channel = optarg; break;
			case 'p': poll_ms = atof(optarg); break;
			case 'w': wait_sql = optarg; break;
			default:
				fprintf(stderr, "usage: consumer -d CONNINFO -m block|notify|poll|await -c CLAIM_SQL "
						"-f COMPLETE_SQL [-n TASKS] [-i IDLE_MS] [-l CHANNEL] [-p POLL_MS] [-w WAIT_SQL]\n");
				return 1;
		}
	}
	if (!conninfo || !claim_sql || !complete_sql ||
		(strcmp(mode, "block") && strcmp(mode, "notify") && strcmp(mode, "poll") &&
		 strcmp(mode, "await")) ||
		(!strcmp(mode, "notify") && !channel) || (!strcmp(mode, "await") && !wait_sql))
	{
		fprintf(stderr, "consumer: bad arguments (see the comment at the top of consumer.c)\n");
		return 1;
	}

	conn = PQconnectdb(conninfo);
	if (PQstatus(conn) != CONNECTION_OK)
		fail("connecting", NULL);
	if (!strcmp(mode, "notify"))
	{
		char	   *ident = PQescapeIdentifier(conn, channel, strlen(channel));
		char		sql[256];
		PGresult   *res;

		snprintf(sql, sizeof(sql), "LISTEN %s", ident);
		PQfreemem(ident);
		res = PQexec(conn, sql);
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
			fail("LISTEN", res);
		PQclear(res);
	}
	fprintf(stderr, "ready\n");
	fflush(stderr);

	last_claim = now_ms();
	while (target == 0 || claimed < target)
	{
		char		wbuf[16];
		const char *cparams[1];
		Oid			ctypes[1] = {INT4OID};
		PGresult   *res;
		int			rows;

		snprintf(wbuf, sizeof(wbuf), "%d", waits);
		cparams[0] = wbuf;
		res = PQexecParams(conn, claim_sql, 1, ctypes, cparams, NULL, NULL, 0);
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
			fail("claim", res);
		rows = PQntuples(res);
		if (rows > 0)
		{
			size_t		len = 0;
			const char *fparams[1];
			Oid			ftypes[1] = {TEXTARRAYOID};
			PGresult   *res2;

			if (arrcap < 64)
			{
				arrcap = 64;
				arr = realloc(arr, arrcap);
			}
			arr[len++] = '{';
			arr[len] = '\0';
			for (int i = 0; i < rows; i++)
				append_elem(&arr, &len, &arrcap, PQgetvalue(res, i, 0));
			arr[len++] = '}';
			arr[len] = '\0';
			PQclear(res);
			fparams[0] = arr;
			res2 = PQexecParams(conn, complete_sql, 1, ftypes, fparams, NULL, NULL, 0);
			if (PQresultStatus(res2) != PGRES_TUPLES_OK && PQresultStatus(res2) != PGRES_COMMAND_OK)
				fail("complete", res2);
			PQclear(res2);
			claimed += rows;
			waits = 0;
			last_claim = now_ms();
			continue;
		}
		PQclear(res);
		empty++;
		{
			double		left = idle_ms - (now_ms() - last_claim);

			if (left <= 0)
				break;
			if (!strcmp(mode, "notify"))
			{
				waits++;
				(void) wait_notify(left);
			}
			else if (!strcmp(mode, "await"))
			{
				PGresult   *wres = PQexec(conn, wait_sql);

				if (PQresultStatus(wres) != PGRES_TUPLES_OK &&
					PQresultStatus(wres) != PGRES_COMMAND_OK)
					fail("wait", wres);
				PQclear(wres);
				waits++;
			}
			else if (!strcmp(mode, "poll"))
			{
				double		ms = poll_ms < left ? poll_ms : left;
				struct timespec ts = {(time_t) (ms / 1000), (long) ((ms - 1000 * (long) (ms / 1000)) * 1e6)};

				waits++;
				nanosleep(&ts, NULL);
			}
		}
	}
	printf("claimed %ld empty %ld\n", claimed, empty);
	PQfinish(conn);
	free(arr);
	return (target == 0 || claimed >= target) ? 0 : 3;
}
