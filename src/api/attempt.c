/*-------------------------------------------------------------------------
 * api/attempt.c
 *	  What a worker does with the attempt it claimed: schedq.heartbeat,
 *	  progress, complete, complete_many, fail and verify_grant.
 *
 * Each checks its token (shared/token.c) and its arguments, then writes
 * through store/task_attempt.c, whose statements change nothing for a
 * token whose attempt is no longer the running one.  complete_many and
 * complete_and_claim complete their tokens in task id order, the order in
 * which an UPDATE through the primary key would lock the rows.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "api/attempt.h"
#include "base/check.h"
#include "shared/call.h"
#include "shared/metrics.h"
#include "shared/token.h"
#include "store/task.h"
#include "store/task_attempt.h"

/*
 * Read and check the token argument shared by heartbeat, complete and
 * fail.
 */
static void
attempt_token_arg(FunctionCallInfo fcinfo, SchedqToken *token)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("token must not be null"));
	schedq_token_require(text_to_cstring(PG_GETARG_TEXT_PP(0)), token);
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
	SchedqToken token;
	SchedqCall	call;
	Interval   *extend = NULL;
	TimestampTz expires;
	bool		running;

	attempt_token_arg(fcinfo, &token);
	if (!PG_ARGISNULL(1))
	{
		extend = PG_GETARG_INTERVAL_P(1);
		(void) schedq_check_interval("extend", extend, false,
									 SCHEDQ_MAX_INTERVAL_USECS,
									 SCHEDQ_MAX_INTERVAL_TEXT);
	}

	schedq_call_begin(&call);
	running =
		schedq_task_attempt_heartbeat(token.task_id, token.attempt, token.nonce,
									  extend, NULL, &expires);
	schedq_call_end(&call);

	if (!running)
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(expires);
}

PG_FUNCTION_INFO_V1(schedq_progress);

/*
 * schedq.progress(token, progress, note, extend): a heartbeat that also
 * records how far the attempt has come, 0 to 100 (NULL: not known), and
 * a short note.  NULL when the token's attempt is no longer running.
 */
Datum
schedq_progress(PG_FUNCTION_ARGS)
{
	SchedqToken	   token;
	SchedqCall	   call;
	SchedqProgress progress = { 0 };
	Interval	  *extend = NULL;
	TimestampTz	   expires;
	bool		   running;

	attempt_token_arg(fcinfo, &token);
	progress.value_null = PG_ARGISNULL(1);
	if (!progress.value_null)
	{
		progress.value = PG_GETARG_FLOAT4(1);
		if (isnan(progress.value) || progress.value < 0 || progress.value > 100)
			ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("progress must be between 0 and 100"));
	}
	if (!PG_ARGISNULL(2))
	{
		progress.note = PG_GETARG_TEXT_PP(2);
		schedq_check_text_size("note", progress.note, SCHEDQ_MAX_NOTE_BYTES);
	}
	if (!PG_ARGISNULL(3))
	{
		extend = PG_GETARG_INTERVAL_P(3);
		(void) schedq_check_interval("extend", extend, false,
									 SCHEDQ_MAX_INTERVAL_USECS,
									 SCHEDQ_MAX_INTERVAL_TEXT);
	}

	schedq_call_begin(&call);
	running =
		schedq_task_attempt_heartbeat(token.task_id, token.attempt, token.nonce,
									  extend, &progress, &expires);
	schedq_call_end(&call);

	if (!running)
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(expires);
}

PG_FUNCTION_INFO_V1(schedq_complete);

/*
 * schedq.complete(token, result): the attempt succeeded.  False, changing
 * nothing, when the grant's attempt is no longer the running one.
 */
Datum
schedq_complete(PG_FUNCTION_ARGS)
{
	SchedqToken token;
	SchedqCall	call;
	Datum		result = PG_ARGISNULL(1) ? (Datum) 0 : PG_GETARG_DATUM(1);
	bool		done;

	attempt_token_arg(fcinfo, &token);
	if (!PG_ARGISNULL(1))
		schedq_check_jsonb_size("result", result);

	schedq_call_begin(&call);
	done = schedq_task_attempt_complete(token.task_id, token.attempt,
										token.nonce, result, PG_ARGISNULL(1));
	schedq_call_end(&call);

	if (done)
		schedq_metrics_count(METRIC_TASKS_COMPLETED, 1);
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
schedq_attempt_tokens_read(FunctionCallInfo fcinfo, int tokens_arg,
						   int results_arg, const char *fn, SchedqTokens *t)
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
		SchedqToken token;

		if (token_nulls[i])
			ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					errmsg("tokens must not contain nulls"));
		schedq_token_require(TextDatumGetCString(tokens[i]), &token);
		t->ids[i] = Int64GetDatum(token.task_id);
		t->attempts[i] = Int32GetDatum(token.attempt);
		t->nonces[i] = Int64GetDatum(token.nonce);
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
attempt_same_token(SchedqTokens *t, int x, int y)
{
	return t->ids[x] == t->ids[y] && t->attempts[x] == t->attempts[y] &&
		   t->nonces[x] == t->nonces[y];
}

/*
 * Complete the attempts read by schedq_attempt_tokens_read; set t->completed[i]
 * where token i's attempt was running and is now done.  In task id order,
 * the order in which an UPDATE through the primary key would lock the
 * rows; a grant given twice counts once, at its first place, and a stale
 * grant of a task changes nothing, wherever it is.  Returns how many were
 * completed.  Inside the caller's SPI connection.
 */
int
schedq_attempt_complete_tokens(SchedqTokens *t)
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
		int i = order[k];

		if (k > 0 && attempt_same_token(t, order[k - 1], i))
			continue;
		t->completed[i] =
			schedq_task_attempt_complete(DatumGetInt64(t->ids[i]),
										 DatumGetInt32(t->attempts[i]),
										 DatumGetInt64(t->nonces[i]),
										 t->results ? t->results[i] : (Datum) 0,
										 !(t->results && !t->result_nulls[i]));
		if (t->completed[i])
			ndone++;
	}
	if (ndone > 0)
		schedq_metrics_count(METRIC_TASKS_COMPLETED, ndone);
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

	schedq_attempt_tokens_read(fcinfo, 0, 1, "complete_many", &t);
	schedq_call_begin(&call);
	(void) schedq_attempt_complete_tokens(&t);
	schedq_call_end(&call);

	out = palloc(sizeof(Datum) * Max(t.n, 1));
	for (int i = 0; i < t.n; i++)
		out[i] = BoolGetDatum(t.completed[i]);
	PG_RETURN_ARRAYTYPE_P(
		construct_array(out, t.n, BOOLOID, 1, true, TYPALIGN_CHAR));
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
	SchedqToken				 token;
	SchedqCall				 call;
	int64					 retry_us = -1;
	static const char *const outcome_names[] = {
		[FAIL_STALE] = "stale",
		[FAIL_RETRY_NOW] = "available",
		[FAIL_RETRY] = "pending",
		[FAIL_FINAL] = "failed",
	};
	SchedqFailOutcome outcome;

	attempt_token_arg(fcinfo, &token);
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
	outcome =
		schedq_task_attempt_fail(token.task_id, token.attempt, &token.nonce,
								 text_to_cstring(PG_GETARG_TEXT_PP(1)),
								 retry_us, PG_GETARG_BOOL(3));
	schedq_call_end(&call);
	PG_RETURN_TEXT_P(cstring_to_text(outcome_names[outcome]));
}

PG_FUNCTION_INFO_V1(schedq_verify_grant);

/*
 * schedq.verify_grant(token): what a token is worth now, without raising
 * an error for a bad one.
 */
Datum
schedq_verify_grant(PG_FUNCTION_ARGS)
{
	char	   *str = text_to_cstring(PG_GETARG_TEXT_PP(0));
	SchedqCall	call;
	SchedqToken token;
	const char *verdict = "valid";

	schedq_call_begin(&call);
	switch (schedq_token_parse(str, &token))
	{
		case TOKEN_MALFORMED:
			verdict = "malformed";
			break;
		case TOKEN_BAD_SIGNATURE:
			verdict = "bad_signature";
			break;
		case TOKEN_OK:
			switch (schedq_task_attempt_state(token.task_id, token.attempt,
											  token.nonce))
			{
				case ATTEMPT_STALE:
					verdict = "stale";
					break;
				case ATTEMPT_EXPIRED:
					verdict = "expired";
					break;
				case ATTEMPT_VALID:
					verdict = "valid";
					break;
			}
			break;
	}
	schedq_call_end(&call);
	PG_RETURN_TEXT_P(cstring_to_text(verdict));
}
