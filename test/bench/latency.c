/*
 * test/bench/latency.c -- the clients of test/bench/latency.sh: a producer
 * that submits one task at a time and consumers that wait for them, each
 * printing one line per task with its own CLOCK_REALTIME stamps next to
 * the server's (all on one machine, so the clocks compare).
 *
 *   latency -d CONNINFO -r producer -s SUBMIT_SQL -n TASKS [-g GAP_US]
 *           [-S SETUP_SQL]
 *   latency -d CONNINFO -r consumer -m block|await|notify -c CLAIM_SQL
 *           -f COMPLETE_SQL [-w WAIT_SQL] [-l CHANNEL] [-i IDLE_MS]
 *           [-S SETUP_SQL]
 *
 * Producer: runs SETUP_SQL once, then TASKS times: note the clock (send),
 * run SUBMIT_SQL (one autocommit statement, no parameters, one row), note
 * the clock (ack), sleep GAP_US microseconds.  Prints
 *     send ack col0 col1 ...
 * per task, the columns of the row as text (NULL as "\N").
 *
 * Consumer: runs SETUP_SQL once (LISTEN CHANNEL is added in notify mode),
 * then claims with CLAIM_SQL until nothing was claimed for IDLE_MS.  Its
 * first column is the task's id, the second what COMPLETE_SQL gets as $1
 * (text) once the row is received; the rest is printed.  How it waits
 * when a claim found nothing:
 *   block   CLAIM_SQL waits by itself (schedq.claim(wait => ...)): run
 *           it again
 *   await   run WAIT_SQL (CALL schedq.await_task(...)), then CLAIM_SQL
 *   notify  poll(2) on the socket until a notification comes, then
 *           CLAIM_SQL
 * Prints per claimed task
 *     wait woke recv col0 col2 col3 ...
 * wait: the clock when the statement that waited was sent (block: the
 * claim; await: the CALL; notify: when the poll began); woke: when the
 * CALL returned or the notification was read (\N in block mode); recv:
 * when the claim's result (its commit included) was received.  Then
 * completes the task.  Prints "ready" on stderr once connected, and
 * "claimed N empty M" on stderr at the end.
 *
 * Clock stamps are microseconds since the epoch, as the server's
 * (extract(epoch FROM ts) * 1e6).  Exit status 0, or 1 on any error.
 *
 * Built by latency.sh with: cc -O2 -I$(pg_config --includedir)
 *                               latency.c -L$(pg_config --libdir) -lpq
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#define TEXTOID 25

static PGconn *conn;

static void
fail(const char *what, PGresult *res)
{
	fprintf(stderr, "latency: %s: %s", what,
			res ? PQresultErrorMessage(res) : PQerrorMessage(conn));
	if (res)
		PQclear(res);
	PQfinish(conn);
	exit(1);
}

/* CLOCK_REALTIME in microseconds since the epoch */
static long long
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void
exec_ok(const char *sql, const char *what)
{
	PGresult   *res = PQexec(conn, sql);

	if (PQresultStatus(res) != PGRES_COMMAND_OK &&
		PQresultStatus(res) != PGRES_TUPLES_OK)
		fail(what, res);
	PQclear(res);
}

/* print the columns of row 0 from column first on, space-separated */
static void
print_cols(PGresult *res, int first, int skip)
{
	for (int i = first; i < PQnfields(res); i++)
	{
		if (i == skip)
			continue;
		printf(" %s", PQgetisnull(res, 0, i) ? "\\N" : PQgetvalue(res, 0, i));
	}
	printf("\n");
}

static int
producer(const char *sql, long tasks, long gap_us)
{
	for (long k = 0; k < tasks; k++)
	{
		long long	send,
					ack;
		PGresult   *res;

		send = now_us();
		res = PQexecParams(conn, sql, 0, NULL, NULL, NULL, NULL, 0);
		ack = now_us();
		if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
			fail("submit", res);
		printf("%lld %lld", send, ack);
		print_cols(res, 0, -1);
		PQclear(res);
		if (gap_us > 0)
		{
			struct timespec ts = {gap_us / 1000000, (gap_us % 1000000) * 1000};

			nanosleep(&ts, NULL);
		}
	}
	return 0;
}

/*
 * Wait up to ms milliseconds for a notification; the clock when one was
 * read, or 0.
 */
static long long
wait_notify(double ms)
{
	struct pollfd pfd;

	for (;;)
	{
		PGnotify   *n;
		long long	got = 0;
		long long	t0;
		int			rc;

		if (!PQconsumeInput(conn))
			fail("reading notifications", NULL);
		while ((n = PQnotifies(conn)) != NULL)
		{
			if (!got)
				got = now_us();
			PQfreemem(n);
		}
		if (got || ms <= 0)
			return got;
		pfd.fd = PQsocket(conn);
		pfd.events = POLLIN;
		pfd.revents = 0;
		t0 = now_us();
		rc = poll(&pfd, 1, (int) (ms + 0.999));
		if (rc < 0 && errno != EINTR)
		{
			perror("latency: poll");
			exit(1);
		}
		if (rc == 0)
			return 0;
		ms -= (now_us() - t0) / 1000.0;
	}
}

static int
consumer(const char *mode, const char *claim_sql, const char *complete_sql,
		 const char *wait_sql, double idle_ms)
{
	long		claimed = 0;
	long		empty = 0;
	long long	last = now_us();
	long long	wait_at = 0;
	long long	woke_at = 0;

	for (;;)
	{
		PGresult   *res;
		long long	sent = now_us();
		long long	recv;

		res = PQexecParams(conn, claim_sql, 0, NULL, NULL, NULL, NULL, 0);
		recv = now_us();
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
			fail("claim", res);
		if (PQntuples(res) > 0)
		{
			const char *param[1];
			Oid			type[1] = {TEXTOID};
			PGresult   *res2;

			/* block: the claim that got it is the one that waited */
			if (!strcmp(mode, "block") || wait_at == 0)
				wait_at = sent;
			printf("%lld ", wait_at);
			if (woke_at)
				printf("%lld", woke_at);
			else
				printf("\\N");
			printf(" %lld %s", recv, PQgetvalue(res, 0, 0));
			print_cols(res, 2, -1);
			fflush(stdout);
			param[0] = PQgetvalue(res, 0, 1);
			res2 = PQexecParams(conn, complete_sql, 1, type, param, NULL, NULL, 0);
			if (PQresultStatus(res2) != PGRES_TUPLES_OK &&
				PQresultStatus(res2) != PGRES_COMMAND_OK)
				fail("complete", res2);
			PQclear(res2);
			PQclear(res);
			claimed++;
			last = now_us();
			wait_at = woke_at = 0;
			continue;
		}
		PQclear(res);
		empty++;
		if ((now_us() - last) / 1000.0 >= idle_ms)
			break;
		if (!strcmp(mode, "await"))
		{
			PGresult   *wres;

			wait_at = now_us();
			wres = PQexec(conn, wait_sql);
			woke_at = now_us();
			if (PQresultStatus(wres) != PGRES_TUPLES_OK &&
				PQresultStatus(wres) != PGRES_COMMAND_OK)
				fail("wait", wres);
			PQclear(wres);
		}
		else if (!strcmp(mode, "notify"))
		{
			wait_at = now_us();
			woke_at = wait_notify(idle_ms - (now_us() - last) / 1000.0);
		}
	}
	fprintf(stderr, "claimed %ld empty %ld\n", claimed, empty);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *conninfo = NULL;
	const char *role = NULL;
	const char *mode = "block";
	const char *sql = NULL;
	const char *complete_sql = NULL;
	const char *wait_sql = NULL;
	const char *channel = NULL;
	const char *setup = NULL;
	long		tasks = 0;
	long		gap_us = 0;
	double		idle_ms = 3000;
	int			opt;
	int			rc;

	while ((opt = getopt(argc, argv, "d:r:m:s:c:f:w:l:S:n:g:i:")) != -1)
	{
		switch (opt)
		{
			case 'd': conninfo = optarg; break;
			case 'r': role = optarg; break;
			case 'm': mode = optarg; break;
			case 's':
			case 'c': sql = optarg; break;
			case 'f': complete_sql = optarg; break;
			case 'w': wait_sql = optarg; break;
			case 'l': channel = optarg; break;
			case 'S': setup = optarg; break;
			case 'n': tasks = atol(optarg); break;
			case 'g': gap_us = atol(optarg); break;
			case 'i': idle_ms = atof(optarg); break;
			default:
				fprintf(stderr, "latency: bad option (see the comment at the top of latency.c)\n");
				return 1;
		}
	}
	if (!conninfo || !role || !sql ||
		(strcmp(role, "producer") && strcmp(role, "consumer")) ||
		(!strcmp(role, "producer") && tasks <= 0) ||
		(!strcmp(role, "consumer") &&
		 (!complete_sql ||
		  (strcmp(mode, "block") && strcmp(mode, "await") && strcmp(mode, "notify")) ||
		  (!strcmp(mode, "await") && !wait_sql) ||
		  (!strcmp(mode, "notify") && !channel))))
	{
		fprintf(stderr, "latency: bad arguments (see the comment at the top of latency.c)\n");
		return 1;
	}

	conn = PQconnectdb(conninfo);
	if (PQstatus(conn) != CONNECTION_OK)
		fail("connecting", NULL);
	if (setup)
		exec_ok(setup, "setup");
	if (channel)
	{
		char	   *ident = PQescapeIdentifier(conn, channel, strlen(channel));
		char		listen[256];

		snprintf(listen, sizeof(listen), "LISTEN %s", ident);
		PQfreemem(ident);
		exec_ok(listen, "LISTEN");
	}
	fprintf(stderr, "ready\n");
	fflush(stderr);

	if (!strcmp(role, "producer"))
		rc = producer(sql, tasks, gap_us);
	else
		rc = consumer(mode, sql, complete_sql, wait_sql, idle_ms);
	fflush(stdout);
	PQfinish(conn);
	return rc;
}
