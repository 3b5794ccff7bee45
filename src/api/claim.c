/*-------------------------------------------------------------------------
 * api/claim.c
 *	  schedq.claim, schedq.claim_queue and schedq._claim_sql: take
 *	  available tasks, waiting for one when asked to;
 *	  schedq.complete_and_claim: finish the tasks of a worker's last claim
 *	  and take the next ones in one transaction.
 *
 * A claim checks its arguments, starts at the claim floor with a fresh
 * nonce and takes what the claim rule allows (store/task_claim.c); each
 * claimed task is returned with a signed token naming that attempt
 * (shared/token.c).  A claim that finds nothing may wait: it registers as
 * a waiter (shared/wake.c) and sleeps until a task it could take is
 * committed.  On a distributed schedq only claim_queue waits, and only on
 * the node that holds its queue's shard (where Citus runs it): that
 * node's submits wake it, and it looks again once a second for what they
 * do not (docs/scale-out.md).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/pg_prng.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "api/attempt.h"
#include "api/await.h"
#include "base/check.h"
#include "base/compat.h"
#include "base/settings.h"
#include "shared/call.h"
#include "shared/metrics.h"
#include "shared/plan.h"
#include "shared/token.h"
#include "shared/wake.h"
#include "store/floor.h"
#include "store/task.h"
#include "store/task_attempt.h"
#include "store/task_citus.h"
#include "store/task_claim.h"

/* Where schedq.claimed_task has the token: where SchedqClaimed has run_at. */
#define CLAIMED_TOKEN CLAIMED_RUN_AT

/* What one claim asks for, checked. */
typedef struct ClaimArgs
{
	SchedqCall		  *call;
	SchedqClaimRequest req;
	int64			   wait_us;
	int64			   relook_us; /* look again this often even unwoken */
	ReturnSetInfo	  *rsinfo;
} ClaimArgs;

/*
 * Claim order of two claimed rows: priority DESC, run_at, id.
 */
static int
claim_cmp(const void *a, const void *b)
{
	const SchedqClaimed *x = a;
	const SchedqClaimed *y = b;
	int32				 pa = DatumGetInt32(x->v[CLAIMED_PRIORITY]);
	int32				 pb = DatumGetInt32(y->v[CLAIMED_PRIORITY]);
	TimestampTz			 ra = DatumGetTimestampTz(x->v[CLAIMED_RUN_AT]);
	TimestampTz			 rb = DatumGetTimestampTz(y->v[CLAIMED_RUN_AT]);
	int64				 ia = DatumGetInt64(x->v[CLAIMED_ID]);
	int64				 ib = DatumGetInt64(y->v[CLAIMED_ID]);

	if (pa != pb)
		return pa > pb ? -1 : 1;
	if (ra != rb)
		return ra < rb ? -1 : 1;
	return ia < ib ? -1 : (ia > ib ? 1 : 0);
}

/*
 * Return the claimed rows in claim order, each with its signed token.
 */
static void
claim_emit(ClaimArgs *args, SchedqClaimed *rows, int n)
{
	qsort(rows, n, sizeof(SchedqClaimed), claim_cmp);
	for (int i = 0; i < n; i++)
	{
		Datum		out[CLAIMED_COLUMNS];
		bool		outnull[CLAIMED_COLUMNS];
		SchedqToken token;

		/* schedq.claimed_task: the claimed columns, the token for run_at */
		memcpy(out, rows[i].v, sizeof(Datum) * CLAIMED_TOKEN);
		memcpy(outnull, rows[i].isnull, sizeof(bool) * CLAIMED_TOKEN);
		token.task_id = DatumGetInt64(out[CLAIMED_ID]);
		token.attempt = DatumGetInt32(out[CLAIMED_ATTEMPT]);
		token.lease_expires =
			DatumGetTimestampTz(out[CLAIMED_LEASE_EXPIRES_AT]);
		token.nonce = args->req.nonce;
		out[CLAIMED_TOKEN] = CStringGetTextDatum(schedq_token_sign(&token));
		outnull[CLAIMED_TOKEN] = false;
		schedq_task_attempt_claimed_at(token.task_id, token.attempt,
									   &rows[i].tid);
		tuplestore_putvalues(args->rsinfo->setResult, args->rsinfo->setDesc,
							 out, outnull);
	}
	schedq_metrics_count(METRIC_TASKS_CLAIMED, n);
}

/*
 * One look for claimable tasks, from the claim floor on; claims and
 * returns what it finds.
 */
static int
claim_once(ClaimArgs *args)
{
	SchedqClaimed *rows = palloc(sizeof(SchedqClaimed) * args->req.n);
	int			   taken;
	bool		   distributed;

	/*
	 * The floor is one server's: a distributed claim starts at its queue's
	 * head, and so does an SQL executor's claim in one shard of its node
	 * (process/sqlexec.c), with the single server's statements.
	 */
	distributed = schedq_task_distributed();
	if (schedq_plan_shard() != 0)
		args->req.floor =
			(SchedqClaimKey){ PG_INT64_MIN, DT_NOBEGIN, PG_INT64_MIN };
	else if (!distributed)
	{
		schedq_floor_probe_if_due();
		schedq_floor_get(&args->req.floor);
	}
	/* drawn anew by every look: a claim that rolls back leaves it unused */
	args->req.nonce = (int64) pg_prng_uint64(&pg_global_prng_state);
	/* the clock, not now(): a claim may have waited */
	args->req.now = GetCurrentTimestamp();
	args->req.caller = args->call->caller;
	args->req.admin = args->call->admin;
	taken = distributed ? schedq_task_citus_claim(&args->req, rows) :
						  schedq_task_claim(&args->req, rows);
	if (taken > 0)
		claim_emit(args, rows, taken);
	pfree(rows);
	return taken;
}

/*
 * Sleep until a task this claim could take becomes available, or wait_us
 * has passed, claiming what comes.  Registers as a waiter *before* each
 * look, so a task made available after the look wakes it; a look that
 * finds nothing passes on a wake-up it could not use (api/await.c).  Holds no
 * row lock while it sleeps: a look that finds nothing locks nothing.  It
 * does hold its statement's snapshot and the relation locks of its looks
 * (await_task does not).  Raises 25006 when the server is or becomes
 * read-only (shared/wake.c): the whole transaction rolls back, even one
 * begun while the server was writable, which could still claim -- the
 * server is being fenced off, and what it writes now may be lost.
 */
static int
claim_wait(ClaimArgs *args)
{
	TimestampTz deadline = GetCurrentTimestamp() + args->wait_us;
	int			taken = 0;

	PG_TRY();
	{
		for (;;)
		{
			TimestampTz until;

			schedq_wake_register(args->req.queues, args->req.caps, false);
			taken = claim_once(args);
			if (taken > 0)
				break;
			schedq_await_pass_on(&args->req, schedq_task_distributed());
			/* a distributed claim_queue also looks again once in a while */
			until = deadline;
			if (args->relook_us > 0)
				until = Min(deadline, GetCurrentTimestamp() + args->relook_us);
			if (!schedq_wake_sleep(until, SCHEDQ_WAIT_EVENT("SchedqClaim")) &&
				GetCurrentTimestamp() >= deadline)
				break;
		}
	}
	PG_FINALLY();
	{
		schedq_wake_unregister();
	}
	PG_END_TRY();
	return taken;
}

PG_FUNCTION_INFO_V1(schedq_claim_sql);

/*
 * schedq._claim_sql(worker): claim one SQL task (kind 'sql', requiring
 * the capability 'sql') for the built-in executor.  Ordinary claims with
 * caps => '{sql}' would also take tasks that need no capability.
 */
Datum
schedq_claim_sql(PG_FUNCTION_ARGS)
{
	SchedqCall call;
	ClaimArgs  args;
	Datum	   sql = CStringGetTextDatum(TASK_SQL);

	memset(&args, 0, sizeof(args));
	args.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	args.call = &call;
	args.req.worker = PG_GETARG_DATUM(0);
	args.req.caps = construct_array(&sql, 1, TEXTOID, -1, false, TYPALIGN_INT);
	args.req.n = 1;
	args.req.lease = palloc0(sizeof(Interval));
	args.req.lease->time = (int64) schedq_default_lease_s * USECS_PER_SEC;
	args.req.filter = CLAIM_SQL_TASKS;

	InitMaterializedSRF(fcinfo, 0);
	schedq_call_begin(&call);
	(void) claim_once(&args);
	schedq_call_end(&call);
	return (Datum) 0;
}

/*
 * Read and check the arguments a claim shares with complete_and_claim:
 * worker, queues, caps, n and lease, at the given argument numbers of the
 * function called.  Errors before anything is written.
 */
static void
claim_read_args(FunctionCallInfo fcinfo, int worker_arg, int queues_arg,
				int caps_arg, int n_arg, int lease_arg, ClaimArgs *args)
{
	if (PG_ARGISNULL(worker_arg))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("worker must not be null"));
	args->req.worker = PG_GETARG_DATUM(worker_arg);
	schedq_check_name("worker", PG_GETARG_TEXT_PP(worker_arg));
	args->req.caps = schedq_check_caps_arg(fcinfo, caps_arg);
	if (PG_ARGISNULL(n_arg))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("n must not be null"));
	args->req.n = PG_GETARG_INT32(n_arg);
	if (args->req.n <= 0 || args->req.n > TASK_MAX_BATCH)
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("n must be between 1 and %d", TASK_MAX_BATCH));
	if (PG_ARGISNULL(lease_arg))
	{
		args->req.lease = palloc0(sizeof(Interval));
		args->req.lease->time = (int64) schedq_default_lease_s * USECS_PER_SEC;
	}
	else
	{
		args->req.lease = PG_GETARG_INTERVAL_P(lease_arg);
		(void) schedq_check_interval("lease", args->req.lease, false,
									 SCHEDQ_MAX_INTERVAL_USECS,
									 SCHEDQ_MAX_INTERVAL_TEXT);
	}
	args->req.filter = CLAIM_ALL_QUEUES;
	if (queues_arg >= 0 && !PG_ARGISNULL(queues_arg))
	{
		ArrayType *arr = PG_GETARG_ARRAYTYPE_P(queues_arg);
		int		   nqueues = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));

		schedq_check_names("queues", arr, SCHEDQ_MAX_QUEUES);
		args->req.queues = arr;
		args->req.filter =
			(nqueues == 1 && ARR_NDIM(arr) == 1 && ARR_LBOUND(arr)[0] == 1) ?
				CLAIM_ONE_QUEUE :
				CLAIM_SOME_QUEUES;
	}
}

/*
 * Read and check wait, at argument wait_arg.  Errors before anything is
 * written.
 */
static void
claim_read_wait(FunctionCallInfo fcinfo, int wait_arg, ClaimArgs *args)
{
	args->wait_us = schedq_check_wait_arg(fcinfo, wait_arg);
	if (args->wait_us > 0 && IsolationUsesXactSnapshot())
		ereport(
			ERROR, errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			errmsg(
				"claim with wait requires the READ COMMITTED isolation level"),
			errdetail(
				"A transaction snapshot would never see tasks that become available while waiting."));
	/* a claim that may wait says why it cannot, rather than its UPDATE's error */
	if (args->wait_us > 0)
		schedq_wake_check_writable();
}

/* Claim what there is and, with nothing, wait for what comes. */
static void
claim_run(ClaimArgs *args)
{
	if (claim_once(args) == 0 && args->wait_us > 0)
		(void) claim_wait(args);
}

PG_FUNCTION_INFO_V1(schedq_claim);

/*
 * schedq.claim(worker, queues, caps, n, lease, wait): claim up to n
 * available tasks; one row per task with its token.
 */
Datum
schedq_claim(PG_FUNCTION_ARGS)
{
	SchedqCall call;
	ClaimArgs  args;

	memset(&args, 0, sizeof(args));
	args.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	args.call = &call;
	claim_read_args(fcinfo, 0, 1, 2, 3, 4, &args);
	claim_read_wait(fcinfo, 5, &args);

	/* wake-ups are one server's: a submit on another node would not wake it */
	if (args.wait_us > 0 && schedq_task_distributed())
		ereport(ERROR, errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("on a distributed schedq, claim does not wait"),
				errhint("Claim one queue with claim_queue, which waits on "
						"its queue's node, or claim without wait and poll."));

	InitMaterializedSRF(fcinfo, 0);
	schedq_call_begin(&call);
	claim_run(&args);
	schedq_call_end(&call);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(schedq_claim_queue);

/*
 * schedq.claim_queue(queue, worker, caps, n, lease, wait): claim exactly as
 * claim(worker, ARRAY[queue], caps, n, lease, wait).  On a distributed
 * schedq it is a distributed function by queue (schedq.distribute), run on
 * the node that holds its queue's shard; there it may wait, on that node's
 * wake-ups.  Anywhere else it refuses to wait (0A000).
 */
Datum
schedq_claim_queue(PG_FUNCTION_ARGS)
{
	SchedqCall call;
	ClaimArgs  args;
	Datum	   queue;

	memset(&args, 0, sizeof(args));
	args.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	args.call = &call;
	if (PG_ARGISNULL(0))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("queue must not be null"),
				errhint("To claim from every queue, call claim."));
	claim_read_args(fcinfo, 1, -1, 2, 3, 4, &args);
	queue = PG_GETARG_DATUM(0);
	args.req.queues =
		construct_array(&queue, 1, TEXTOID, -1, false, TYPALIGN_INT);
	schedq_check_names("queues", args.req.queues, SCHEDQ_MAX_QUEUES);
	args.req.filter = CLAIM_ONE_QUEUE;
	claim_read_wait(fcinfo, 5, &args);

	InitMaterializedSRF(fcinfo, 0);
	schedq_call_begin(&call);
	if (args.wait_us > 0 && schedq_task_distributed())
	{
		/* wake-ups are one node's: those of the node with the queue's shard */
		schedq_task_citus_require_local(queue, "claim_queue");
		args.relook_us = SCHEDQ_CITUS_RELOOK_USECS;
	}
	claim_run(&args);
	schedq_call_end(&call);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(schedq_complete_and_claim);

/*
 * schedq.complete_and_claim(tokens, worker, results, queues, caps, n,
 * lease): a worker's cycle in one call and one transaction.  Completes the
 * attempts of tokens exactly as complete_many does (a stale one changes
 * nothing), then claims up to n tasks exactly as claim does without wait,
 * and returns claim's rows.  Every argument is checked before anything is
 * written.  It never waits for a task: it would hold the completed rows'
 * locks while it waited, so a worker given no row waits with await_task
 * or claim(wait => ...), after this call's commit.
 */
Datum
schedq_complete_and_claim(PG_FUNCTION_ARGS)
{
	SchedqCall	 call;
	ClaimArgs	 args;
	SchedqTokens tokens;

	memset(&args, 0, sizeof(args));
	args.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	args.call = &call;
	schedq_attempt_tokens_read(fcinfo, 0, 2, "complete_and_claim", &tokens);
	claim_read_args(fcinfo, 1, 3, 4, 5, 6, &args);

	InitMaterializedSRF(fcinfo, 0);
	schedq_call_begin(&call);
	(void) schedq_attempt_complete_tokens(&tokens);
	(void) claim_once(&args);
	schedq_call_end(&call);
	return (Datum) 0;
}
