/*-------------------------------------------------------------------------
 * attempt.c
 *	  What a worker does with the attempt it claimed: schedq.heartbeat,
 *	  complete, complete_many and fail.
 *
 * Every write here is guarded by (id, attempts, status = 'running'): a
 * grant for an attempt that is no longer the running one changes nothing.
 * fail's logic (retry with backoff while attempts remain) is shared with
 * the reaper, for which a lost lease or a timeout is a failed attempt.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/pg_prng.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "storage/itemptr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "attempt.h"
#include "call.h"
#include "check.h"
#include "direct.h"
#include "grant.h"
#include "metrics.h"
#include "plan.h"
#include "task.h"
#include "wake.h"

/* Backoff of fail(): 1 s after the first attempt, doubling, capped. */
#define BACKOFF_BASE_USECS USECS_PER_SEC
#define BACKOFF_MAX_USECS  (3600 * USECS_PER_SEC)

/* The running attempt a grant names: $1 id, $2 attempt, $3 nonce. */
#define ATTEMPT_IS_RUNNING                                                     \
	" id = $1 AND attempts = $2 AND claim_nonce = $3 AND status = 'running'"

static SchedqQuery q_heartbeat =
	SCHEDQ_QUERY("UPDATE schedq.task"
				 " SET lease_expires_at = least(greatest(lease_expires_at,"
				 "     now() + COALESCE($4, lease)), deadline)"
				 " WHERE" ATTEMPT_IS_RUNNING " RETURNING lease_expires_at",
				 INT8OID, INT4OID, INT8OID, INTERVALOID);
static SchedqQuery q_complete =
	SCHEDQ_QUERY("UPDATE schedq.task"
				 " SET status = 'done', result = $4, finished_at = now()"
				 " WHERE" ATTEMPT_IS_RUNNING,
				 INT8OID, INT4OID, INT8OID, JSONBOID);
static SchedqQuery q_complete_tid =
	SCHEDQ_QUERY("UPDATE schedq.task"
				 " SET status = 'done', result = $4, finished_at = now()"
				 " WHERE ctid = $5 AND" ATTEMPT_IS_RUNNING,
				 INT8OID, INT4OID, INT8OID, JSONBOID, TIDOID);
/* $3 NULL: any nonce (the reaper, which locked the row itself) */
static SchedqQuery q_fail_lock =
	SCHEDQ_QUERY("SELECT attempts - retry_base >= max_attempts,"
				 "       attempts - retry_base," TASK_UNGATED_SQL ","
				 "       queue, required_caps"
				 " FROM schedq.task"
				 " WHERE id = $1 AND attempts = $2 AND status = 'running'"
				 "   AND ($3::bigint IS NULL OR claim_nonce = $3)"
				 " FOR UPDATE",
				 INT8OID, INT4OID, INT8OID);
static SchedqQuery q_fail_final =
	SCHEDQ_QUERY("UPDATE schedq.task"
				 " SET status = 'failed', last_error = $2,"
				 "     finished_at = now()"
				 " WHERE id = $1",
				 INT8OID, TEXTOID);
static SchedqQuery q_fail_retry =
	SCHEDQ_QUERY("UPDATE schedq.task"
				 " SET status = $4, last_error = $2,"
				 "     run_at = now() + make_interval(secs => $3 / 1e6),"
				 "     claimed_by = NULL, lease_expires_at = NULL,"
				 "     deadline = NULL"
				 " WHERE id = $1",
				 INT8OID, TEXTOID, INT8OID, TEXTOID);

/*
 * Where the tasks this backend claimed last were, so that complete() in
 * the same session, the common case, finds its row by TID instead of
 * walking the primary key (whose entries for a task include every
 * version since the last VACUUM).  Only a hint: complete checks id,
 * attempt and status on the row it finds there, and falls back to the
 * primary key when there is none (a heartbeat or anything else moved the
 * row).  Direct-mapped by task id.
 */
#define CLAIMED_ROWS 256

typedef struct ClaimedRow
{
	int64			task_id;
	int32			attempt;
	ItemPointerData tid;
} ClaimedRow;

static ClaimedRow claimed_rows[CLAIMED_ROWS];

static ClaimedRow *
claimed_row_slot(int64 task_id)
{
	return &claimed_rows[(uint64) task_id % CLAIMED_ROWS];
}

/*
 * claim took this attempt of a task; its row version is at tid.
 */
void
schedq_attempt_claimed_at(int64 task_id, int32 attempt, ItemPointer tid)
{
	ClaimedRow *slot = claimed_row_slot(task_id);

	slot->task_id = task_id;
	slot->attempt = attempt;
	ItemPointerCopy(tid, &slot->tid);
}

/*
 * Read and check the grant argument shared by heartbeat, complete and
 * fail, and put the attempt it names into values[0..2], the parameters of
 * ATTEMPT_IS_RUNNING.
 */
static void
attempt_grant_arg(FunctionCallInfo fcinfo, SchedqGrant *grant, Datum *values)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("token must not be null"));
	schedq_grant_require(text_to_cstring(PG_GETARG_TEXT_PP(0)), grant);
	values[0] = Int64GetDatum(grant->task_id);
	values[1] = Int32GetDatum(grant->attempt);
	values[2] = Int64GetDatum(grant->nonce);
}

PG_FUNCTION_INFO_V1(schedq_heartbeat);

/*
 * schedq.heartbeat(token, extend): push the lease to now() + extend (by
 * default the lease the claim asked for), never shortening it.  NULL when
 * the grant's attempt is no longer running.
 */
Datum
schedq_heartbeat(PG_FUNCTION_ARGS)
{
	SchedqGrant grant;
	SchedqCall	call;
	Datum		values[4];
	char		nulls[4] = { ' ', ' ', ' ', ' ' };
	bool		isnull = true;
	Datum		expires = (Datum) 0;

	attempt_grant_arg(fcinfo, &grant, values);
	if (PG_ARGISNULL(1))
		nulls[3] = 'n';
	else
	{
		values[3] = PG_GETARG_DATUM(1);
		(void) schedq_check_interval("extend", PG_GETARG_INTERVAL_P(1), false,
									 SCHEDQ_MAX_INTERVAL_USECS,
									 SCHEDQ_MAX_INTERVAL_TEXT);
	}

	schedq_call_begin(&call);
	if (schedq_run(&q_heartbeat, values, nulls, 0, SPI_OK_UPDATE_RETURNING) ==
		1)
		expires = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
								&isnull);
	schedq_call_end(&call);

	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(expires);
}

/*
 * Complete one attempt: values[0..3] are q_complete's parameters, values[4]
 * and nulls[4] room for the TID.  Goes first to the row where this
 * session's claim left the attempt (the hint), then through the primary
 * key.  True when the attempt was running and is now done.  Inside the
 * caller's SPI connection.
 */
static bool
attempt_complete_one(Datum *values, char *nulls)
{
	int64			task_id = DatumGetInt64(values[0]);
	int32			attempt = DatumGetInt32(values[1]);
	ClaimedRow	   *slot = claimed_row_slot(task_id);
	ItemPointerData hint;

	ItemPointerSetInvalid(&hint);
	if (slot->task_id == task_id && slot->attempt == attempt)
	{
		hint = slot->tid;
		slot->task_id = 0;
	}
	switch (schedq_direct_complete(task_id, attempt, DatumGetInt64(values[2]),
								   values[3], nulls[3] == 'n', &hint))
	{
		case DIRECT_DONE:
			return true;
		case DIRECT_STALE:
			return false;
		case DIRECT_FALLBACK:
			break;
	}
	if (ItemPointerIsValid(&hint))
	{
		values[4] = PointerGetDatum(&hint);
		nulls[4] = ' ';
		if (schedq_run(&q_complete_tid, values, nulls, 0, SPI_OK_UPDATE) == 1)
			return true;
	}
	return schedq_run(&q_complete, values, nulls, 0, SPI_OK_UPDATE) == 1;
}

PG_FUNCTION_INFO_V1(schedq_complete);

/*
 * schedq.complete(token, result): the attempt succeeded.  False, changing
 * nothing, when the grant's attempt is no longer the running one.
 */
Datum
schedq_complete(PG_FUNCTION_ARGS)
{
	SchedqGrant grant;
	SchedqCall	call;
	Datum		values[5];
	char		nulls[5] = { ' ', ' ', ' ', PG_ARGISNULL(1) ? 'n' : ' ', ' ' };
	bool		done;

	attempt_grant_arg(fcinfo, &grant, values);
	values[3] = PG_ARGISNULL(1) ? (Datum) 0 : PG_GETARG_DATUM(1);
	if (!PG_ARGISNULL(1))
		schedq_check_jsonb_size("result", values[3]);

	schedq_call_begin(&call);
	done = attempt_complete_one(values, nulls);
	schedq_call_end(&call);

	if (done)
		schedq_count(METRIC_TASKS_COMPLETED, 1);
	PG_RETURN_BOOL(done);
}

/*
 * An error unless the array argument has at most one dimension: a token or
 * a result is an element of a list, never of a matrix.
 */
static void
attempt_check_one_dimension(const char *what, ArrayType *arr)
{
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR, errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				errmsg("%s must be a one-dimensional array", what));
}

/*
 * Read and check the tokens and results arguments of complete_many and
 * complete_and_claim (argument numbers tokens_arg and results_arg of the
 * function called as fn): one dimension each, at most TASK_MAX_BATCH
 * tokens (counted before they are taken apart), no NULL, each a valid
 * grant, results (when not NULL) one per token and each within
 * schedq.max_payload.  Errors before anything is written.  Outside the
 * call bracket: what it allocates must outlive the SPI connection.
 */
void
schedq_tokens_read(FunctionCallInfo fcinfo, int tokens_arg, int results_arg,
				   const char *fn, SchedqTokens *t)
{
	Datum	  *tokens;
	bool	  *token_nulls;
	int		   nresults;
	ArrayType *arr;

	memset(t, 0, sizeof(*t));
	if (PG_ARGISNULL(tokens_arg))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("tokens must not be null"),
				errhint(
					"Pass an empty array when there is nothing to finish."));
	arr = PG_GETARG_ARRAYTYPE_P(tokens_arg);
	attempt_check_one_dimension("tokens", arr);
	if (ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr)) > TASK_MAX_BATCH)
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("%s takes at most %d tokens", fn, TASK_MAX_BATCH));
	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &tokens,
					  &token_nulls, &t->n);
	if (!PG_ARGISNULL(results_arg))
	{
		arr = PG_GETARG_ARRAYTYPE_P(results_arg);
		attempt_check_one_dimension("results", arr);
		deconstruct_array(arr, JSONBOID, -1, false, TYPALIGN_INT, &t->results,
						  &t->result_nulls, &nresults);
		if (nresults != t->n)
			ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("results must have one element per token"),
					errdetail("%d tokens, %d results.", t->n, nresults));
		for (int i = 0; i < t->n; i++)
			if (!t->result_nulls[i])
				schedq_check_jsonb_size("result", t->results[i]);
	}

	t->ids = palloc(sizeof(Datum) * Max(t->n, 1));
	t->attempts = palloc(sizeof(Datum) * Max(t->n, 1));
	t->nonces = palloc(sizeof(Datum) * Max(t->n, 1));
	t->completed = palloc0(sizeof(bool) * Max(t->n, 1));
	for (int i = 0; i < t->n; i++)
	{
		SchedqGrant grant;

		if (token_nulls[i])
			ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					errmsg("tokens must not contain nulls"));
		schedq_grant_require(TextDatumGetCString(tokens[i]), &grant);
		t->ids[i] = Int64GetDatum(grant.task_id);
		t->attempts[i] = Int32GetDatum(grant.attempt);
		t->nonces[i] = Int64GetDatum(grant.nonce);
	}
}

/*
 * Token places in task id order, then by grant (attempt, nonce), a grant's
 * first place first.
 */
static int
attempt_cmp_place(const void *a, const void *b, void *arg)
{
	SchedqTokens *t = arg;
	int			  x = *(const int *) a;
	int			  y = *(const int *) b;
	int64		  idx = DatumGetInt64(t->ids[x]);
	int64		  idy = DatumGetInt64(t->ids[y]);
	int32		  ax = DatumGetInt32(t->attempts[x]);
	int32		  ay = DatumGetInt32(t->attempts[y]);
	int64		  nx = DatumGetInt64(t->nonces[x]);
	int64		  ny = DatumGetInt64(t->nonces[y]);

	if (idx != idy)
		return idx < idy ? -1 : 1;
	if (ax != ay)
		return ax < ay ? -1 : 1;
	if (nx != ny)
		return nx < ny ? -1 : 1;
	return x - y;
}

static bool
attempt_same_grant(SchedqTokens *t, int x, int y)
{
	return t->ids[x] == t->ids[y] && t->attempts[x] == t->attempts[y] &&
		   t->nonces[x] == t->nonces[y];
}

/*
 * Complete the attempts read by schedq_tokens_read; set t->completed[i]
 * where token i's attempt was running and is now done.  In task id order,
 * the order in which an UPDATE through the primary key would lock the
 * rows; a grant given twice counts once, at its first place, and a stale
 * grant of a task changes nothing, wherever it is.  Returns how many were
 * completed.  Inside the caller's SPI connection.
 */
int
schedq_complete_tokens(SchedqTokens *t)
{
	int *order;
	int	 ndone = 0;

	if (t->n == 0)
		return 0;
	order = palloc(sizeof(int) * t->n);
	for (int i = 0; i < t->n; i++)
		order[i] = i;
	qsort_arg(order, t->n, sizeof(int), attempt_cmp_place, t);
	for (int k = 0; k < t->n; k++)
	{
		int	  i = order[k];
		Datum values[5];
		char  nulls[5] = { ' ', ' ', ' ', ' ', 'n' };

		if (k > 0 && attempt_same_grant(t, order[k - 1], i))
			continue;
		values[0] = t->ids[i];
		values[1] = t->attempts[i];
		values[2] = t->nonces[i];
		values[3] = t->results ? t->results[i] : (Datum) 0;
		nulls[3] = t->results && !t->result_nulls[i] ? ' ' : 'n';
		t->completed[i] = attempt_complete_one(values, nulls);
		if (t->completed[i])
			ndone++;
	}
	if (ndone > 0)
		schedq_count(METRIC_TASKS_COMPLETED, ndone);
	return ndone;
}

PG_FUNCTION_INFO_V1(schedq_complete_many);

/*
 * schedq.complete_many(tokens, results): complete() for many grants in
 * one statement, for a worker that claimed a batch (at most 1000 tokens,
 * the most one claim returns).  Returns one boolean per token, in order:
 * true where that attempt was running and is now done.  A token given
 * twice counts once, at its first place.  Every token is checked before
 * anything is written, so one forged or malformed token fails the whole
 * call and changes nothing.
 */
Datum
schedq_complete_many(PG_FUNCTION_ARGS)
{
	SchedqCall	 call;
	SchedqTokens t;
	Datum		*out;

	schedq_tokens_read(fcinfo, 0, 1, "complete_many", &t);
	schedq_call_begin(&call);
	(void) schedq_complete_tokens(&t);
	schedq_call_end(&call);

	out = palloc(sizeof(Datum) * Max(t.n, 1));
	for (int i = 0; i < t.n; i++)
		out[i] = BoolGetDatum(t.completed[i]);
	PG_RETURN_ARRAYTYPE_P(
		construct_array(out, t.n, BOOLOID, 1, true, TYPALIGN_CHAR));
}

/*
 * How long to wait before attempt number `used` + 1: 1 s after the first
 * attempt, doubling, capped at an hour, with +-25 % jitter.
 */
static int64
fail_backoff_usecs(int32 used)
{
	int64 delay = BACKOFF_MAX_USECS;

	if (used >= 1 && used <= 13)
		delay = Min(BACKOFF_BASE_USECS << (used - 1), BACKOFF_MAX_USECS);
	return (int64) (delay *
					(0.75 + 0.5 * pg_prng_double(&pg_global_prng_state)));
}

/*
 * Fail attempt `attempt` of a task: retry it after retry_us (or the
 * backoff, when retry_us is negative) while attempts remain and the
 * failure is not permanent, else fail it for good.  The write is guarded
 * by (id, attempt, status = 'running'); returns what it did
 * (FAIL_STALE when that attempt is no longer the running one).  Shared by
 * fail() and the reaper.  Inside the caller's SPI connection.
 */
SchedqFailOutcome
schedq_fail_attempt(int64 task_id, int32 attempt, const int64 *nonce,
					const char *error, int64 retry_us, bool permanent)
{
	Datum	  values[4];
	char	  nulls[3] = { ' ', ' ', nonce ? ' ' : 'n' };
	HeapTuple tuple;
	TupleDesc desc;
	bool	  isnull;
	bool	  exhausted;
	int32	  used;
	bool	  ungated;
	int64	  delay;

	values[0] = Int64GetDatum(task_id);
	values[1] = Int32GetDatum(attempt);
	values[2] = nonce ? Int64GetDatum(*nonce) : (Datum) 0;
	if (schedq_run(&q_fail_lock, values, nulls, 0, SPI_OK_SELECT) == 0)
		return FAIL_STALE;

	tuple = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	exhausted = DatumGetBool(SPI_getbinval(tuple, desc, 1, &isnull));
	used = DatumGetInt32(SPI_getbinval(tuple, desc, 2, &isnull));
	ungated = DatumGetBool(SPI_getbinval(tuple, desc, 3, &isnull));

	values[1] = CStringGetTextDatum(error);
	if (permanent || exhausted)
	{
		schedq_run(&q_fail_final, values, NULL, 0, SPI_OK_UPDATE);
		schedq_count(METRIC_TASKS_FAILED, 1);
		return FAIL_FINAL;
	}

	/*
	 * Retry at once as 'available' only when nothing would gate it;
	 * otherwise the promotion loop decides.
	 */
	delay = retry_us >= 0 ? retry_us : fail_backoff_usecs(used);
	if (delay == 0 && ungated)
		schedq_task_available_at_commit(SPI_getvalue(tuple, desc, 4),
										DatumGetArrayTypeP(
											SPI_getbinval(tuple, desc, 5,
														  &isnull)),
										PG_INT32_MAX, DT_NOBEGIN,
										PG_INT64_MIN /* the head: a bound */);
	else
		schedq_wake_scheduler_at_commit();
	values[2] = Int64GetDatum(delay);
	values[3] = CStringGetTextDatum(
		schedq_task_status_names[delay == 0 && ungated ? TASK_AVAILABLE :
														 TASK_PENDING]);
	schedq_run(&q_fail_retry, values, NULL, 0, SPI_OK_UPDATE);
	schedq_count(METRIC_TASKS_RETRIED, 1);
	return delay == 0 && ungated ? FAIL_RETRY_NOW : FAIL_RETRY;
}

PG_FUNCTION_INFO_V1(schedq_fail);

/*
 * schedq.fail(token, error, retry_in, permanent): the attempt failed.
 * While attempts remain (and the failure is not permanent) the task goes
 * back to wait retry_in, or the backoff; otherwise it is 'failed'.
 * Returns the new status, or 'stale' for a grant whose attempt is no
 * longer the running one.
 */
Datum
schedq_fail(PG_FUNCTION_ARGS)
{
	SchedqGrant				 grant;
	SchedqCall				 call;
	Datum					 attempt[3];
	int64					 retry_us = -1;
	static const char *const outcome_names[] = {
		[FAIL_STALE] = "stale",
		[FAIL_RETRY_NOW] = "available",
		[FAIL_RETRY] = "pending",
		[FAIL_FINAL] = "failed",
	};
	SchedqFailOutcome outcome;

	attempt_grant_arg(fcinfo, &grant, attempt);
	if (PG_ARGISNULL(1))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("error must not be null"));
	schedq_check_text_size("error", PG_GETARG_TEXT_PP(1),
						   SCHEDQ_MAX_ERROR_BYTES);
	if (PG_ARGISNULL(3))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("permanent must not be null"));
	if (!PG_ARGISNULL(2))
		retry_us = schedq_check_interval("retry_in", PG_GETARG_INTERVAL_P(2),
										 true, SCHEDQ_MAX_INTERVAL_USECS,
										 SCHEDQ_MAX_INTERVAL_TEXT);

	schedq_call_begin(&call);
	outcome = schedq_fail_attempt(grant.task_id, grant.attempt, &grant.nonce,
								  text_to_cstring(PG_GETARG_TEXT_PP(1)),
								  retry_us, PG_GETARG_BOOL(3));
	schedq_call_end(&call);
	PG_RETURN_TEXT_P(cstring_to_text(outcome_names[outcome]));
}
