/*-------------------------------------------------------------------------
 * schedqctl/workerclaim.c
 *	  Claiming tasks, and reporting how their programs ended.
 *
 *	  The worker calls claim, complete_and_claim, complete, complete_many
 *	  and fail on the control connection.
 *
 *	  The loop claims n => (free slots) whenever a slot is free and the
 *	  last claim was not short, and starts a program for each task
 *	  claimed (workerchild.c).
 *
 *	  Round trips and commits: the programs that have finished when the
 *	  loop comes round are reported together.  Those that exited 0 are
 *	  completed, and the slots they free claimed for, by one
 *	  complete_and_claim (one statement, one commit, one round trip for all
 *	  of them and the next tasks); a verify_grant of their tokens goes
 *	  before it in the same pipeline and transaction, to log the stale
 *	  ones.  While shutting down, complete (or complete_many for several)
 *	  and nothing claimed.  Failures, rarer, are reported one fail() each.
 *	  If the server refuses a batch (a result too large, a forged token),
 *	  each task is reported on its own, which shrinks a result the server
 *	  refuses, and the claim is made on its own.
 *
 *	  A program that could not be run (exit 126 or 127, or not started at
 *	  all) did not fail its task: the worker's command is at fault.  The
 *	  task is given back by fail with a retry delay of zero (the API has no
 *	  other way; its attempt counts), logged "returned", and the worker
 *	  stops claiming and exits (worker.c's ctl_worker_fault).
 *
 *	  Reports are guarded by the token: a complete that returns false or a
 *	  fail that returns 'stale' lost its lease; that is logged and never
 *	  retried.  A report that could not be sent because the connection
 *	  broke is sent again after reconnecting: if the first one committed,
 *	  the second finds the attempt finished and is stale, so no task is
 *	  reported twice.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <sys/wait.h>

#include "common/logging.h"
#include "fe_utils/string_utils.h"
#include "worker.h"

/* The claim: up to $4 tasks, with the seconds left of each lease. */
static const char *const claim_sql =
	"SELECT id, attempt, queue, kind, payload, run_id, token, "
	"extract(epoch FROM lease_expires_at - pg_catalog.clock_timestamp()) "
	"FROM schedq.claim($1, $2::text[], $3::text[], $4::integer, "
	"$5::interval)";

/* complete_and_claim: the claim's columns, as claim_sql has them. */
static const char *const complete_and_claim_sql =
	"SELECT id, attempt, queue, kind, payload, run_id, token, "
	"extract(epoch FROM lease_expires_at - pg_catalog.clock_timestamp()) "
	"FROM schedq.complete_and_claim($1::text[], $2, $3::jsonb[], $4::text[], "
	"$5::text[], $6::integer, $7::interval)";

/*
 * What each token is worth just before complete_and_claim uses it, in the
 * same transaction: complete_and_claim returns the claimed rows only, and
 * a stale token changes nothing without saying so.
 */
static const char *const verify_sql =
	"SELECT schedq.verify_grant(t) FROM pg_catalog.unnest($1::text[]) "
	"WITH ORDINALITY AS u(t, o) ORDER BY o";

static const char *const complete_sql = "SELECT schedq.complete($1, $2::jsonb)";

static const char *const complete_many_sql =
	"SELECT schedq.complete_many($1::text[], $2::jsonb[])";

static const char *const fail_sql =
	"SELECT schedq.fail($1, $2, retry_in => $3::interval, "
	"permanent => $4::boolean)";

/* The programs that exited 0, reported together. */
typedef struct Batch
{
	Slot **done;
	char **results; /* their results, NULL for none */
	int	   ndone;
	char  *tokens_param;  /* text[] literal */
	char  *results_param; /* jsonb[] literal */
} Batch;

/*
 * Complete the task of a program that exited 0.  A result the server
 * refuses (too large as jsonb, say) is sent again as a truncated wrapper
 * of a quarter of the limit.  Returns false if the connection broke.
 */
static bool
report_done(Worker *w, Slot *s, int code)
{
	char	   *result = ctl_workerchild_result(s, w->max_result);
	const char *values[2] = { s->token, result };
	PGresult   *res;
	WorkerCheck rc;

	res = PQexecParams(w->conn, complete_sql, 2, NULL, values, NULL, NULL, 0);
	rc = ctl_workerconn_check(w, res, "complete");
	if (rc == CHECK_REFUSED && result != NULL &&
		PQstatus(w->conn) == CONNECTION_OK)
	{
		PQclear(res);
		pg_free(result);
		result = ctl_workerchild_result(s, w->max_result / 4 > 256 ?
											   w->max_result / 4 :
											   256);
		values[1] = result;
		res =
			PQexecParams(w->conn, complete_sql, 2, NULL, values, NULL, NULL, 0);
		rc = ctl_workerconn_check(w, res, "complete");
	}
	pg_free(result);
	if (rc == CHECK_LOST)
	{
		PQclear(res);
		return false;
	}
	if (rc == CHECK_OK)
		ctl_worker_log_task(w, s,
							strcmp(PQgetvalue(res, 0, 0), "t") == 0 ? "done" :
																	  "stale",
							code, NULL);
	else
		ctl_worker_log_task(w, s, "error", code, "complete refused");
	PQclear(res);
	return true;
}

/*
 * Fail the attempt of a program that did not exit 0, with the error
 * prefix and the tail of its stderr.  Returns false if the connection
 * broke.
 */
static bool
report_failed(Worker *w, Slot *s, int code, const char *prefix,
			  const char *retry_in, bool permanent, bool returned)
{
	char	   *error = ctl_workerchild_error(s, prefix);
	const char *values[4] = { s->token, error, retry_in,
							  permanent ? "true" : "false" };
	PGresult   *res;
	WorkerCheck rc;

	res = PQexecParams(w->conn, fail_sql, 4, NULL, values, NULL, NULL, 0);
	rc = ctl_workerconn_check(w, res, "fail");
	if (rc == CHECK_OK)
	{
		const char *status = PQgetvalue(res, 0, 0);

		bool again =
			strcmp(status, "pending") == 0 || strcmp(status, "available") == 0;

		ctl_worker_log_task(w, s,
							s->killed == KILL_TIMEOUT ? "timeout" :
							again && returned		  ? "returned" :
							again					  ? "retry" :
														status,
							code, error);
	}
	else if (rc == CHECK_REFUSED)
		ctl_worker_log_task(w, s, "error", code, "fail refused");
	PQclear(res);
	pg_free(error);
	return rc != CHECK_LOST;
}

/*
 * A program that could not be run, not the task's failure: the worker's
 * fault (its command is missing or not executable, or the system refused
 * a resource).  The task is given back: failed for a retry at once, with
 * an error that says it did not run; the API has no way to return an
 * attempt, so the attempt counts, and a task on its last attempt fails.
 * The worker stops claiming (ctl_worker_fault).  Returns false if the
 * connection broke.
 */
static bool
report_not_run(Worker *w, Slot *s, int code, int fault, const char *why)
{
	char prefix[512];

	snprintf(prefix, sizeof(prefix),
			 "not run: the worker could not run its command (%s); given "
			 "back",
			 why);
	ctl_worker_fault(w, fault,
					 "task %s: the command \"%s\" could not be run "
					 "(%s)",
					 s->id, w->cmd[0], why);
	return report_failed(w, s, code, prefix, "0", false, true);
}

/*
 * Report a finished program on its own: how it ended decides between
 * complete and fail (retried at once after a shutdown, for good after an
 * exit status other than 75; given back after 126 or 127, the shell's
 * "cannot execute" and "not found").  Returns false if the connection
 * broke before the answer came: the slot stays and the report is sent
 * again after reconnecting.
 */
static bool
report_one(Worker *w, Slot *s)
{
	int			code = -1;
	bool		permanent = false;
	const char *retry_in = NULL;
	char		prefix[128];

	if (s->killed == KILL_LOST)
	{
		ctl_worker_log_task(w, s, "lost", -1,
							"the task is no longer this worker's (canceled "
							"or reclaimed); nothing reported");
		return true;
	}
	if (s->not_run != 0)
	{
		/* Why it did not start is the error, not a program's stderr. */
		char *why = pg_strdup(s->err.data);
		bool  ok;

		resetPQExpBuffer(&s->err);
		ok = report_not_run(w, s, -1, s->not_run, why);
		pg_free(why);
		return ok;
	}
	if (s->killed == KILL_TIMEOUT)
		snprintf(prefix, sizeof(prefix),
				 "timeout: process group killed after %.1fs",
				 ctl_worker_now() - s->started);
	else if (s->killed == KILL_SHUTDOWN)
	{
		snprintf(prefix, sizeof(prefix),
				 "worker shut down: process group killed after %.1fs",
				 ctl_worker_now() - s->started);
		retry_in = "0";
	}
	else if (WIFEXITED(s->wstatus))
	{
		code = WEXITSTATUS(s->wstatus);
		if (code == 0)
			return report_done(w, s, code);
		if (code == 126 || code == 127)
		{
			snprintf(prefix, sizeof(prefix), "exit status %d: %s", code,
					 code == 126 ? "cannot execute" : "not found");
			return report_not_run(w, s, code, EXIT_USAGE, prefix);
		}
		snprintf(prefix, sizeof(prefix), "exit status %d%s", code,
				 code == EX_TEMPFAIL ? " (EX_TEMPFAIL)" : "");
		permanent = (code != EX_TEMPFAIL);
	}
	else
		snprintf(prefix, sizeof(prefix), "killed by signal %d",
				 WTERMSIG(s->wstatus));
	return report_failed(w, s, code, prefix, retry_in, permanent, false);
}

/*
 * Is a claim's error one of our arguments' (docs/reference.md, claim's
 * SQLSTATEs: 22004, 22023, 2202E, 54000, 0A000, 55000)?  Those repeat on
 * every try; other errors (57014 canceled, 40001, 40P01, 55P03, XX000)
 * come from what else ran at the time.
 */
static bool
claim_error_is_ours(const char *state)
{
	if (state == NULL || strlen(state) != 5)
		return false;
	return strncmp(state, "22", 2) == 0 || strncmp(state, "54", 2) == 0 ||
		   strncmp(state, "0A", 2) == 0 || strcmp(state, "55000") == 0;
}

/*
 * Start the program of row i of a claim's answer in the free slot s.  A
 * program that cannot be started is the worker's fault: its task is given
 * back (report_not_run).
 */
static void
claim_start(Worker *w, PGresult *res, int i, Slot *s)
{
	char   err[256];
	double left = atof(PQgetvalue(res, i, 7));

	s->used = true;
	w->running++;
	s->id = pg_strdup(PQgetvalue(res, i, 0));
	s->attempt = pg_strdup(PQgetvalue(res, i, 1));
	s->queue = pg_strdup(PQgetvalue(res, i, 2));
	s->kind = pg_strdup(PQgetvalue(res, i, 3));
	s->token = pg_strdup(PQgetvalue(res, i, 6));
	initPQExpBuffer(&s->out);
	initPQExpBuffer(&s->err);
	s->out_fd = s->err_fd = -1;
	s->started = ctl_worker_now();
	s->expires = s->started + left;
	s->hb_every = left / 3 > 0.1 ? left / 3 : 0.1;
	s->next_hb = s->started + s->hb_every;
	if (!ctl_workerchild_start(w, s, PQgetvalue(res, i, 4),
							   PQgetvalue(res, i, 5), err, sizeof(err)))
	{
		appendPQExpBufferStr(&s->err, err);
		s->pid = 0;
		if (report_one(w, s))
			ctl_workerchild_free(w, s);
	}
}

/*
 * Take the answer of a claim: start a program for each task claimed, in a
 * free slot.  Returns how many were claimed, or -1 if the claim failed
 * (the connection is then dropped, to be made again after a back-off).
 * Consumes res.
 */
static int
claim_take(Worker *w, PGresult *res)
{
	int got;

	if (ctl_workerconn_check(w, res, "claim") != CHECK_OK)
	{
		const char *state =
			res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
		bool ours = claim_error_is_ours(state);

		PQclear(res);
		if (w->conn != NULL)
		{
			/*
			 * An error that is not the connection's.  If the first claim
			 * fails on our arguments (--lease, --queue, --caps: a data
			 * exception, a limit, a feature or state claim refuses), they
			 * will never pass: give up.  Anything else (canceled, a
			 * serialization failure, a deadlock, a lock timeout, an
			 * internal error), and any later error, may pass: back off as
			 * after a disconnect, rather than spin.
			 */
			if (!w->claimed_ok && ours)
			{
				ctl_workerchild_kill_all(w);
				exit(state[0] == '2' || (state[0] == '5' && state[1] == '4') ?
						 EXIT_USAGE :
						 EXIT_ERROR);
			}
			ctl_workerconn_disconnect(w, "claim failed");
		}
		return -1;
	}
	w->claimed_ok = true;
	ctl_workerconn_working(w);
	got = PQntuples(res);
	for (int i = 0, j = 0; i < got; i++)
	{
		while (j < w->concurrency && w->slots[j].used)
			j++;
		if (j == w->concurrency || w->conn == NULL)
		{
			/*
			 * No slot for it: a batch of reports was refused and the
			 * connection broke while they were sent one by one, so their
			 * slots are still taken.  Without a connection the task cannot
			 * be handed back either: its lease runs out and the reaper
			 * retries it, as after a claim whose answer was lost.
			 */
			ctl_worker_log(w, "warning",
						   "task %s claimed but not started (no free slot); "
						   "its lease will expire",
						   PQgetvalue(res, i, 0));
			continue;
		}
		claim_start(w, res, i, &w->slots[j]);
	}
	PQclear(res);
	return got;
}

/* Claim up to n tasks and start them.  Returns how many were claimed. */
int
ctl_workerclaim_claim(Worker *w, int n)
{
	char		nbuf[16];
	const char *values[5] = { w->name, w->queues_param, w->caps_param, nbuf,
							  w->lease };

	snprintf(nbuf, sizeof(nbuf), "%d", n);
	return claim_take(w, PQexecParams(w->conn, claim_sql, 5, NULL, values, NULL,
									  NULL, 0));
}

/*
 * Send n queries in one pipeline (libpq's pipeline mode), then read their
 * answers: one round trip for all of them.  With one_xact false each query
 * is followed by a sync point, so each is its own transaction and an error
 * in one does not abort the others; with one_xact true a single sync point
 * follows the last, so they run in one transaction (one commit), and an
 * error aborts it: the queries after the failed one answer
 * PGRES_PIPELINE_ABORTED.  res[i] gets the result of query i.  Returns
 * false if the connection broke (it is then dropped; res[] is all NULL).
 */
static bool
pipeline(Worker *w, int n, const char *const *sql, const int *nparams,
		 const char *const *const *values, PGresult **res, bool one_xact)
{
	PGconn *conn = w->conn;
	bool	ok = PQenterPipelineMode(conn) == 1;

	for (int i = 0; i < n; i++)
		res[i] = NULL;
	for (int i = 0; ok && i < n; i++)
		ok = PQsendQueryParams(conn, sql[i], nparams[i], NULL, values[i], NULL,
							   NULL, 0) == 1 &&
			 ((one_xact && i < n - 1) || PQpipelineSync(conn) == 1);
	for (int i = 0; ok && i < n; i++)
	{
		PGresult *r;

		/* The query's result, then NULL, then (maybe) the sync point's. */
		while ((r = PQgetResult(conn)) != NULL)
		{
			if (res[i] == NULL)
				res[i] = r;
			else
				PQclear(r);
		}
		ok = res[i] != NULL;
		if (ok && (!one_xact || i == n - 1))
		{
			r = PQgetResult(conn);
			ok = r != NULL && PQresultStatus(r) == PGRES_PIPELINE_SYNC;
			PQclear(r);
		}
	}
	if (ok)
		ok = PQexitPipelineMode(conn) == 1;
	if (!ok || PQstatus(conn) != CONNECTION_OK)
	{
		char why[256];

		snprintf(why, sizeof(why), "pipeline: %s", PQerrorMessage(conn));
		why[strcspn(why, "\n")] = '\0';
		for (int i = 0; i < n; i++)
		{
			PQclear(res[i]);
			res[i] = NULL;
		}
		ctl_workerconn_disconnect(w, why);
		return false;
	}
	return true;
}

/*
 * Report the finished programs that did not exit 0 one by one, and gather
 * those that did into b, with their results and the array literals of
 * their tokens and results.
 */
static void
batch_collect(Worker *w, Batch *b)
{
	char **tokens = pg_malloc0(sizeof(char *) * w->concurrency);

	b->done = pg_malloc0(sizeof(Slot *) * w->concurrency);
	b->results = pg_malloc0(sizeof(char *) * w->concurrency);
	for (int i = 0; i < w->concurrency && w->conn != NULL; i++)
	{
		Slot *s = &w->slots[i];

		if (!s->used || s->pid != 0)
			continue;
		if (ctl_workerchild_done(s))
			b->done[b->ndone++] = s;
		else if (report_one(w, s))
			ctl_workerchild_free(w, s);
	}
	if (w->conn != NULL && b->ndone > 0)
	{
		for (int i = 0; i < b->ndone; i++)
		{
			tokens[i] = b->done[i]->token;
			b->results[i] = ctl_workerchild_result(b->done[i], w->max_result);
		}
		b->tokens_param = ctl_text_array(tokens, b->ndone);
		b->results_param = ctl_text_array(b->results, b->ndone);
	}
	pg_free(tokens);
}

/* Free what batch_collect made. */
static void
batch_free(Batch *b)
{
	for (int i = 0; i < b->ndone; i++)
		pg_free(b->results[i]);
	pg_free(b->tokens_param);
	pg_free(b->results_param);
	pg_free(b->done);
	pg_free(b->results);
}

/* The server refused the batch: report its tasks one by one. */
static void
batch_report_each(Worker *w, Batch *b)
{
	for (int i = 0; i < b->ndone && w->conn != NULL; i++)
		if (report_one(w, b->done[i]))
			ctl_workerchild_free(w, b->done[i]);
}

/*
 * Take the answers of verify_grant and complete_and_claim (res[0], res[1]):
 * log and free the completed tasks, start the claimed ones.  Returns the
 * number claimed, or -1.  Clears both results.
 */
static int
batch_take_complete_and_claim(Worker *w, Batch *b, PGresult **res, int want)
{
	/* The first error, if any: the other answer is PIPELINE_ABORTED. */
	bool		verified = PQresultStatus(res[0]) == PGRES_TUPLES_OK;
	WorkerCheck rc = ctl_workerconn_check(w, verified ? res[1] : res[0],
										  "complete_and_claim");
	int			got = -1;

	if (rc == CHECK_OK)
	{
		for (int i = 0; i < b->ndone; i++)
		{
			const char *verdict =
				i < PQntuples(res[0]) ? PQgetvalue(res[0], i, 0) : "";

			ctl_worker_log_task(w, b->done[i],
								strcmp(verdict, "stale") == 0 ? "stale" :
																"done",
								0, NULL);
			ctl_workerchild_free(w, b->done[i]);
		}
		got = claim_take(w, res[1]);
		res[1] = NULL;
		if (got >= 0 && got < want)
			w->want_claim = false;
	}
	else if (rc == CHECK_REFUSED)
	{
		/* Nothing was done: one at a time; the claim is made on its own. */
		batch_report_each(w, b);
	}
	PQclear(res[0]);
	PQclear(res[1]);
	return got;
}

/*
 * Take the answer of complete ("t" or "f") or complete_many ("{t,f,...}",
 * one per task, in order): log and free the tasks.  Clears res.
 */
static void
batch_take_complete(Worker *w, Batch *b, PGresult *res)
{
	WorkerCheck rc =
		ctl_workerconn_check(w, res,
							 b->ndone == 1 ? "complete" : "complete_many");

	if (rc == CHECK_OK)
	{
		const char *answer = PQgetvalue(res, 0, 0);
		char	  **items = NULL;
		int			nitems = 0;

		if (b->ndone > 1 && !parsePGArray(answer, &items, &nitems))
			nitems = 0;
		for (int i = 0; i < b->ndone; i++)
		{
			const char *v = b->ndone == 1 ? answer : i < nitems ? items[i] : "";

			ctl_worker_log_task(w, b->done[i],
								strcmp(v, "t") == 0 ? "done" : "stale", 0,
								NULL);
			ctl_workerchild_free(w, b->done[i]);
		}
		free(items);
	}
	else if (rc == CHECK_REFUSED)
		batch_report_each(w, b);
	PQclear(res);
}

/*
 * Report every finished program and claim for the free slots, in as few
 * round trips and commits as the API allows, as the header says.  A
 * verify_grant of each token precedes complete_and_claim, in the same
 * pipeline and the same transaction, and says which completions were
 * stale (logged "stale"; a cancel or a reclaim that commits between the
 * two statements, microseconds apart, is logged "done" although the
 * completion changed nothing).  Returns the number claimed, -1 if no
 * claim was made or it failed.
 */
int
ctl_workerclaim_report_finished(Worker *w)
{
	Batch			   b = { 0 };
	int				   want = 0;
	int				   nq = 0;
	int				   got = -1;
	bool			   one_xact = false;
	char			   nbuf[16];
	const char		  *sql[2];
	int				   nparams[2];
	const char *const *values[2];
	const char		  *verify_values[1];
	const char		  *complete_values[7];
	const char *claim_values[5] = { w->name, w->queues_param, w->caps_param,
									nbuf, w->lease };
	PGresult   *res[2];

	batch_collect(w, &b);
	if (w->conn == NULL)
	{
		/* Reported after reconnecting. */
		batch_free(&b);
		return -1;
	}
	if (b.ndone > 0 && !w->draining)
	{
		/* One transaction: verify_grant, then complete_and_claim. */
		want = w->concurrency - w->running + b.ndone;
		snprintf(nbuf, sizeof(nbuf), "%d", want);
		verify_values[0] = b.tokens_param;
		sql[0] = verify_sql;
		nparams[0] = 1;
		values[0] = verify_values;
		complete_values[0] = b.tokens_param;
		complete_values[1] = w->name;
		complete_values[2] = b.results_param;
		complete_values[3] = w->queues_param;
		complete_values[4] = w->caps_param;
		complete_values[5] = nbuf;
		complete_values[6] = w->lease;
		sql[1] = complete_and_claim_sql;
		nparams[1] = 7;
		values[1] = complete_values;
		nq = 2;
		one_xact = true;
	}
	else if (b.ndone == 1)
	{
		/* Shutting down: complete, claim nothing. */
		complete_values[0] = b.done[0]->token;
		complete_values[1] = b.results[0];
		sql[nq] = complete_sql;
		nparams[nq] = 2;
		values[nq++] = complete_values;
	}
	else if (b.ndone > 1)
	{
		complete_values[0] = b.tokens_param;
		complete_values[1] = b.results_param;
		sql[nq] = complete_many_sql;
		nparams[nq] = 2;
		values[nq++] = complete_values;
	}
	else if (!w->draining && w->want_claim && w->running < w->concurrency)
	{
		want = w->concurrency - w->running;
		snprintf(nbuf, sizeof(nbuf), "%d", want);
		sql[nq] = claim_sql;
		nparams[nq] = 5;
		values[nq++] = claim_values;
	}

	/* Not sent when the connection broke: reported after reconnecting. */
	if (nq > 0 && pipeline(w, nq, sql, nparams, values, res, one_xact))
	{
		if (one_xact)
			got = batch_take_complete_and_claim(w, &b, res, want);
		else if (b.ndone > 0)
			batch_take_complete(w, &b, res[0]);
		else if (want > 0)
		{
			got = claim_take(w, res[0]);
			if (got >= 0 && got < want)
				w->want_claim = false;
		}
	}

	batch_free(&b);
	return got;
}
