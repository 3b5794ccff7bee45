/*-------------------------------------------------------------------------
 * api/claim.c
 *	  schedq.claim and schedq._claim_sql: take available tasks, waiting
 *	  for one when asked to; schedq.complete_and_claim: finish the tasks
 *	  of a worker's last claim and take the next ones in one transaction.
 *
 * claim picks the head of the available set in claim order (priority,
 * then run_at, then id) with FOR UPDATE SKIP LOCKED, so concurrent claims
 * never wait on each other and never get the same task.  A candidate that
 * names budgets is admitted only if every budget, locked in name order,
 * has room for its cost; the charge is made in the same statement.  The
 * chosen rows then become 'running' with attempts + 1 and a lease, and
 * each gets a signed grant naming that attempt (attempt.c takes it from
 * there).
 *
 * A claim starts its index scan at the claim floor (floor.c), and a claim
 * that finds nothing may wait: it registers as a waiter (wake.c) and
 * sleeps until a task it could take is committed.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/pg_prng.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/itemptr.h"
#include "storage/latch.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "api/attempt.h"
#include "store/task_attempt.h"
#include "api/await.h"
#include "api/budget.h"
#include "shared/call.h"
#include "lib/check.h"
#include "lib/compat.h"
#include "lib/cron.h"
#include "store/direct.h"
#include "shared/sqlslots.h"
#include "store/floor.h"
#include "shared/token.h"
#include "shared/metrics.h"
#include "shared/plan.h"
#include "api/queue.h"
#include "lib/settings.h"
#include "store/task.h"
#include "shared/wake.h"

/* Which queue filter a claim's candidate query has. */
typedef enum ClaimQueueFilter
{
	CLAIM_ALL_QUEUES,
	CLAIM_ONE_QUEUE,
	CLAIM_SOME_QUEUES,
	CLAIM_SQL_TASKS, /* the built-in executor: SQL tasks only */
	CLAIM_NUM_FILTERS
} ClaimQueueFilter;

/* What one claim asks for, checked. */
typedef struct ClaimArgs
{
	SchedqCall		*call;
	ClaimQueueFilter filter;
	Datum			 queues; /* text[], or 0 for every queue */
	Datum			 caps;	 /* text[] */
	int32			 n;
	Datum			 worker; /* text */
	Interval		*lease;
	int64			 nonce; /* fences this claim's attempts (grant.c) */
	int64			 wait_us;
	ReturnSetInfo	*rsinfo;
} ClaimArgs;

/*
 * The candidate query, one variant per queue filter.  While the database
 * has no budget at all, claim runs it as the CTE of one UPDATE that takes
 * the tasks (claim_direct), sparing every claim a statement and the
 * budget tables.  With budgets, it runs alone with a budget pre-filter,
 * which keeps tasks whose budgets are full from taking the places of
 * claimable ones; admission (schedq_budget_admit) is what enforces the
 * budgets, so a stale "no budgets" answer costs order, never a limit.
 *
 * These are generic plans (plan.c), so they are written for the planner's
 * estimates: "required_caps = '{}' OR ..." and the NOT EXISTS have
 * statistics to go by, where "required_caps <@ $3" alone and
 * "queue <> ALL (...)" are guessed so selective that the planner would
 * sort the whole available set instead of walking task_available_idx.
 *
 * Parameters: $1 n, $2 queues, $3 caps, $4 caller, $5 admin, $6 worker,
 * $7 lease, $8 the clock, $9-$11 the claim floor, $12 the claim's nonce,
 * $13 (SQL tasks only) the tasks the executors are still running.
 */
#define CLAIM_TYPES                                                            \
	INT4OID, TEXTARRAYOID, TEXTARRAYOID, OIDOID, BOOLOID, TEXTOID,             \
		INTERVALOID, TIMESTAMPTZOID, INT8OID, TIMESTAMPTZOID, INT8OID,         \
		INT8OID, INT8ARRAYOID

#define CLAIM_BUDGET_FILTER                                                      \
	" AND (t.budgets = '{}' OR NOT EXISTS ("                                     \
	"   SELECT FROM schedq.budget b WHERE b.name = ANY (t.budgets)"              \
	"   AND CASE WHEN b.period_start + b.period <= now() THEN 0 ELSE b.used END" \
	"       + t.cost > b.hard_limit))"

#define CLAIM_NOT_PAUSED                                                       \
	" AND NOT EXISTS (SELECT FROM schedq.queue q"                              \
	"                 WHERE q.name = t.queue AND q.paused)"

#define CLAIM_CANDIDATES(queue_filter, paused_filter, budget_filter)           \
	"SELECT t.id, t.budgets, t.cost FROM schedq.task t"                        \
	" WHERE t.status = 'available'" queue_filter                               \
	" AND (t.required_caps = '{}' OR t.required_caps <@ $3)"                   \
	" AND ($5 OR pg_has_role($4, t.owner::oid, 'USAGE'))" paused_filter        \
		budget_filter                                                          \
	" AND (-(t.priority::bigint), t.run_at, t.id) >= ($9, $10, $11)"           \
	" ORDER BY -(t.priority::bigint), t.run_at, t.id"                          \
	" LIMIT $1 FOR UPDATE OF t SKIP LOCKED"

#define CLAIM_ALL_SQL  ""
#define CLAIM_ONE_SQL  " AND t.queue = ($2::text[])[1]"
#define CLAIM_SOME_SQL " AND t.queue = ANY ($2::text[])"
#define CLAIM_SQL_ONLY                                                         \
	" AND t.kind = '" TASK_SQL "' AND '" TASK_SQL "' = ANY (t.required_caps)"  \
	" AND t.id <> ALL ($13)"

#define CLAIM_BUDGETED(queue_filter)                                           \
	SCHEDQ_QUERY(CLAIM_CANDIDATES(queue_filter, CLAIM_NOT_PAUSED,              \
								  CLAIM_BUDGET_FILTER),                        \
				 CLAIM_TYPES)

static SchedqQuery claim_candidates[CLAIM_NUM_FILTERS] = {
	CLAIM_BUDGETED(CLAIM_ALL_SQL),
	CLAIM_BUDGETED(CLAIM_ONE_SQL),
	CLAIM_BUDGETED(CLAIM_SOME_SQL),
	CLAIM_BUDGETED(CLAIM_SQL_ONLY),
};

/*
 * Columns of a claimed task, as both claim paths return them; the last,
 * where the claimed row version is, goes to the claimed-row hint
 * (attempt.c).
 */
#define CLAIM_RETURNING                                                        \
	" RETURNING t.id, t.attempts, t.queue, t.kind, t.payload, t.priority,"     \
	" t.run_id, t.lease_expires_at, t.run_at, t.ctid"

#define CLAIM_SET                                                              \
	" SET status = 'running', attempts = t.attempts + 1, claimed_by = $6,"     \
	"     lease = $7, lease_expires_at = least($8 + $7, $8 + t.timeout),"      \
	"     started_at = $8, deadline = $8 + t.timeout, claim_nonce = $12"

/*
 * The budgeted path's second statement: take the admitted candidates.
 * The parameters are the candidate query's, with $1 the admitted ids.
 */
static SchedqQuery claim_take =
	SCHEDQ_QUERY("UPDATE schedq.task t" CLAIM_SET
				 " WHERE t.id = ANY ($1)" CLAIM_RETURNING,
				 INT8ARRAYOID, TEXTARRAYOID, TEXTARRAYOID, OIDOID, BOOLOID,
				 TEXTOID, INTERVALOID, TIMESTAMPTZOID, INT8OID, TIMESTAMPTZOID,
				 INT8OID, INT8OID, INT8ARRAYOID);

/*
 * The one-statement claim: candidates locked and taken at once.  The CTE
 * is joined through "= ANY (ARRAY(...))", an index scan of the primary
 * key whatever the planner guesses of the CTE's size.  Indexed by
 * [whether any queue is paused][queue filter]: while no queue is paused
 * the candidate scan needs no anti-join with schedq.queue.
 */
#define CLAIM_DIRECT(queue_filter, paused_filter)                                \
	SCHEDQ_QUERY(                                                                \
		"WITH c AS (" CLAIM_CANDIDATES(                                          \
			queue_filter, paused_filter,                                         \
			"") ")"                                                              \
				" UPDATE schedq.task t" CLAIM_SET                                \
				" WHERE t.id = ANY (ARRAY(SELECT c.id FROM c))" CLAIM_RETURNING, \
		CLAIM_TYPES)

static SchedqQuery claim_direct[2][CLAIM_NUM_FILTERS] = {
	{
		CLAIM_DIRECT(CLAIM_ALL_SQL, ""),
		CLAIM_DIRECT(CLAIM_ONE_SQL, ""),
		CLAIM_DIRECT(CLAIM_SOME_SQL, ""),
		CLAIM_DIRECT(CLAIM_SQL_ONLY, ""),
	},
	{
		CLAIM_DIRECT(CLAIM_ALL_SQL, CLAIM_NOT_PAUSED),
		CLAIM_DIRECT(CLAIM_ONE_SQL, CLAIM_NOT_PAUSED),
		CLAIM_DIRECT(CLAIM_SOME_SQL, CLAIM_NOT_PAUSED),
		CLAIM_DIRECT(CLAIM_SQL_ONLY, CLAIM_NOT_PAUSED),
	},
};

/*
 * Claim order of two claimed rows: priority DESC, run_at, id.
 */
static int
claim_cmp(const void *a, const void *b)
{
	const SchedqClaimed *x = a;
	const SchedqClaimed *y = b;
	int32				 pa = DatumGetInt32(x->v[5]);
	int32				 pb = DatumGetInt32(y->v[5]);
	TimestampTz			 ra = DatumGetTimestampTz(x->v[8]);
	TimestampTz			 rb = DatumGetTimestampTz(y->v[8]);
	int64				 ia = DatumGetInt64(x->v[0]);
	int64				 ib = DatumGetInt64(y->v[0]);

	if (pa != pb)
		return pa > pb ? -1 : 1;
	if (ra != rb)
		return ra < rb ? -1 : 1;
	return ia < ib ? -1 : (ia > ib ? 1 : 0);
}

/*
 * Return the claimed rows in claim order, each with its signed grant.
 */
static void
claim_emit(ClaimArgs *args, SchedqClaimed *rows, int n)
{
	qsort(rows, n, sizeof(SchedqClaimed), claim_cmp);
	for (int i = 0; i < n; i++)
	{
		Datum		out[9];
		bool		outnull[9];
		SchedqToken grant;

		memcpy(out, rows[i].v, sizeof(Datum) * 8);
		memcpy(outnull, rows[i].isnull, sizeof(bool) * 8);
		grant.task_id = DatumGetInt64(out[0]);
		grant.attempt = DatumGetInt32(out[1]);
		grant.lease_expires = DatumGetTimestampTz(out[7]);
		grant.nonce = args->nonce;
		out[8] = CStringGetTextDatum(schedq_token_sign(&grant));
		outnull[8] = false;
		schedq_task_attempt_claimed_at(grant.task_id, grant.attempt, &rows[i].tid);
		tuplestore_putvalues(args->rsinfo->setResult, args->rsinfo->setDesc,
							 out, outnull);
	}
	schedq_metrics_count(METRIC_TASKS_CLAIMED, n);
}

/*
 * Return the n rows of SPI_tuptable (claimed tasks, CLAIM_RETURNING's
 * columns) as claim_emit does.
 */
static void
claim_emit_spi(ClaimArgs *args, int n)
{
	SchedqClaimed *rows = palloc(sizeof(SchedqClaimed) * Max(n, 1));

	for (int i = 0; i < n; i++)
	{
		bool isnull;

		for (int c = 0; c < CLAIMED_COLUMNS; c++)
			rows[i].v[c] =
				SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
							  c + 1, &rows[i].isnull[c]);
		ItemPointerCopy((ItemPointer) DatumGetPointer(
							SPI_getbinval(SPI_tuptable->vals[i],
										  SPI_tuptable->tupdesc,
										  CLAIMED_COLUMNS + 1, &isnull)),
						&rows[i].tid);
	}
	claim_emit(args, rows, n);
}

/*
 * The claim without budgets and paused queues, without the executor
 * (direct.c).  Returns how many it claimed, or -1 when the statement
 * must do it.
 */
static int
claim_direct_write(ClaimArgs *args, const SchedqClaimKey *floor)
{
	SchedqDirectClaim c;
	SchedqClaimed	 *rows = palloc(sizeof(SchedqClaimed) * args->n);
	int				  taken;

	memset(&c, 0, sizeof(c));
	c.index = "task_available_idx";
	switch (args->filter)
	{
		case CLAIM_ALL_QUEUES:
			break;
		case CLAIM_ONE_QUEUE:
		{
			Datum *queues;
			bool  *nulls;
			int	   n;

			deconstruct_array(DatumGetArrayTypeP(args->queues), TEXTOID, -1,
							  false, TYPALIGN_INT, &queues, &nulls, &n);
			c.index = "task_available_queue_idx";
			c.queue = queues[0];
			break;
		}
		case CLAIM_SOME_QUEUES:
			c.queues = DatumGetArrayTypeP(args->queues);
			break;
		case CLAIM_SQL_TASKS:
			c.index = "task_available_sql_idx";
			c.sql_only = true;
			c.busy = DatumGetArrayTypeP(schedq_sqlslots_busy_tasks());
			break;
		case CLAIM_NUM_FILTERS:
			pg_unreachable();
	}
	c.caps = DatumGetArrayTypeP(args->caps);
	c.caller = args->call->caller;
	c.admin = args->call->admin;
	c.n = args->n;
	c.worker = args->worker;
	c.lease = args->lease;
	c.now = GetCurrentTimestamp(); /* the clock: a claim may have waited */
	c.floor_prio = floor->prio;
	c.floor_run_at = floor->run_at;
	c.floor_id = floor->id;
	c.nonce = args->nonce;

	taken = schedq_direct_claim(&c, rows);
	if (taken > 0)
		claim_emit(args, rows, taken);
	return taken;
}

/*
 * One look for claimable tasks; claims and returns what it finds.
 * Without budgets or paused queues in the database it claims without the
 * executor (claim_direct_write); otherwise without budgets it is one
 * statement; with budgets, the candidates are locked first, admitted one
 * by one, then taken.
 */
static int
claim_once(ClaimArgs *args)
{
	Datum		   values[13];
	char		   nulls[13] = { ' ', ' ', ' ', ' ', ' ', ' ', ' ',
								 ' ', ' ', ' ', ' ', ' ', ' ' };
	SchedqClaimKey floor;
	SPITupleTable *candidates;
	Datum		  *ids;
	int			   found;
	int			   taken = 0;

	/* start at the claim floor (floor.c) */
	schedq_floor_probe_if_due();
	schedq_floor_get(&floor);
	/* drawn anew by every look: a claim that rolls back leaves it unused */
	args->nonce = (int64) pg_prng_uint64(&pg_global_prng_state);

	if (!schedq_budget_any() && !schedq_queue_any_paused() &&
		(taken = claim_direct_write(args, &floor)) >= 0)
		return taken;

	values[0] = Int32GetDatum(args->n);
	values[1] = args->queues;
	nulls[1] = args->queues == (Datum) 0 ? 'n' : ' ';
	values[2] = args->caps;
	values[3] = ObjectIdGetDatum(args->call->caller);
	values[4] = BoolGetDatum(args->call->admin);
	values[5] = args->worker;
	values[6] = IntervalPGetDatum(args->lease);
	/* the clock, not now(): a claim may have waited */
	values[7] = TimestampTzGetDatum(GetCurrentTimestamp());
	values[8] = Int64GetDatum(floor.prio);
	values[9] = TimestampTzGetDatum(floor.run_at);
	values[10] = Int64GetDatum(floor.id);
	values[11] = Int64GetDatum(args->nonce);
	/* SQL tasks an executor still runs (retried while it ignores a cancel) */
	values[12] = args->filter == CLAIM_SQL_TASKS ?
					 schedq_sqlslots_busy_tasks() :
					 (Datum) 0;
	nulls[12] = args->filter == CLAIM_SQL_TASKS ? ' ' : 'n';

	if (!schedq_budget_any())
	{
		int paused = schedq_queue_any_paused() ? 1 : 0;

		taken = schedq_plan_run(&claim_direct[paused][args->filter], values, nulls,
						   0, SPI_OK_UPDATE_RETURNING);
		if (taken > 0)
			claim_emit_spi(args, taken);
		return taken;
	}

	found = schedq_plan_run(&claim_candidates[args->filter], values, nulls, 0,
					   SPI_OK_SELECT);
	candidates = SPI_tuptable;
	ids = palloc(sizeof(Datum) * Max(found, 1));
	for (int i = 0; i < found; i++)
	{
		bool  isnull;
		Datum budgets =
			SPI_getbinval(candidates->vals[i], candidates->tupdesc, 2, &isnull);
		ArrayType *arr = DatumGetArrayTypeP(budgets);

		if (ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr)) > 0 &&
			!schedq_budget_admit(budgets, SPI_getbinval(candidates->vals[i],
														candidates->tupdesc, 3,
														&isnull)))
		{
			/* Another claim used the room between our look and our lock. */
			schedq_metrics_count(METRIC_CLAIM_CONTENTION, 1);
			continue;
		}
		ids[taken++] =
			SPI_getbinval(candidates->vals[i], candidates->tupdesc, 1, &isnull);
	}
	if (taken == 0)
		return 0;

	values[0] =
		PointerGetDatum(construct_array(ids, taken, INT8OID, 8, FLOAT8PASSBYVAL,
										TYPALIGN_DOUBLE));
	if (schedq_plan_run(&claim_take, values, nulls, 0, SPI_OK_UPDATE_RETURNING) !=
		taken)
		elog(ERROR, "claimed %d tasks but could not take them all", taken);
	claim_emit_spi(args, taken);
	return taken;
}

/*
 * Sleep until a task this claim could take becomes available, or wait_us
 * has passed, claiming what comes.  Registers as a waiter *before* each
 * look, so a task made available after the look wakes it; a look that
 * finds nothing passes on a wake-up it could not use (await.c).  Holds no
 * row lock while it sleeps: a look that finds nothing locks nothing.  It
 * does hold its statement's snapshot and the relation locks of its looks
 * (await_task does not).
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
			schedq_wake_register(args->queues == (Datum) 0 ?
									   NULL :
									   DatumGetArrayTypeP(args->queues),
								   DatumGetArrayTypeP(args->caps), false);
			taken = claim_once(args);
			if (taken > 0)
				break;
			schedq_await_pass_on();
			if (!schedq_wake_sleep(deadline,
									 SCHEDQ_WAIT_EVENT("SchedqClaim")))
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
	args.worker = PG_GETARG_DATUM(0);
	args.caps = PointerGetDatum(
		construct_array(&sql, 1, TEXTOID, -1, false, TYPALIGN_INT));
	args.n = 1;
	args.lease = palloc0(sizeof(Interval));
	args.lease->time = (int64) schedq_default_lease_s * USECS_PER_SEC;
	args.filter = CLAIM_SQL_TASKS;

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
	args->worker = PG_GETARG_DATUM(worker_arg);
	schedq_check_name("worker", PG_GETARG_TEXT_PP(worker_arg));
	if (PG_ARGISNULL(caps_arg))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("caps must not be null"),
				errhint(
					"Pass an empty array for a worker without capabilities."));
	args->caps = PG_GETARG_DATUM(caps_arg);
	schedq_check_names("caps", DatumGetArrayTypeP(args->caps),
					   SCHEDQ_MAX_NAMES);
	if (PG_ARGISNULL(n_arg))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("n must not be null"));
	args->n = PG_GETARG_INT32(n_arg);
	if (args->n <= 0 || args->n > TASK_MAX_BATCH)
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("n must be between 1 and %d", TASK_MAX_BATCH));
	if (PG_ARGISNULL(lease_arg))
	{
		args->lease = palloc0(sizeof(Interval));
		args->lease->time = (int64) schedq_default_lease_s * USECS_PER_SEC;
	}
	else
	{
		args->lease = PG_GETARG_INTERVAL_P(lease_arg);
		(void) schedq_check_interval("lease", args->lease, false,
									 SCHEDQ_MAX_INTERVAL_USECS,
									 SCHEDQ_MAX_INTERVAL_TEXT);
	}
	args->filter = CLAIM_ALL_QUEUES;
	if (!PG_ARGISNULL(queues_arg))
	{
		ArrayType *arr = PG_GETARG_ARRAYTYPE_P(queues_arg);
		int		   nqueues = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));

		schedq_check_names("queues", arr, SCHEDQ_MAX_QUEUES);
		args->queues = PointerGetDatum(arr);
		args->filter =
			(nqueues == 1 && ARR_NDIM(arr) == 1 && ARR_LBOUND(arr)[0] == 1) ?
				CLAIM_ONE_QUEUE :
				CLAIM_SOME_QUEUES;
	}
}

PG_FUNCTION_INFO_V1(schedq_claim);

/*
 * schedq.claim(worker, queues, caps, n, lease, wait): claim up to n
 * available tasks; one row per task with its grant.
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
	if (PG_ARGISNULL(5))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("wait must not be null"));
	args.wait_us =
		schedq_check_interval("wait", PG_GETARG_INTERVAL_P(5), true,
							  SCHEDQ_MAX_WAIT_USECS, SCHEDQ_MAX_WAIT_TEXT);
	if (args.wait_us > 0 && IsolationUsesXactSnapshot())
		ereport(
			ERROR, errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			errmsg(
				"claim with wait requires the READ COMMITTED isolation level"),
			errdetail(
				"A transaction snapshot would never see tasks that become available while waiting."));

	InitMaterializedSRF(fcinfo, 0);
	schedq_call_begin(&call);
	if (claim_once(&args) == 0 && args.wait_us > 0)
		(void) claim_wait(&args);
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
