/*-------------------------------------------------------------------------
 * work.c
 *	  The worker's side of the API: schedq.claim, heartbeat, complete and
 *	  fail.
 *
 * claim picks the head of the available set in claim order (priority,
 * then run_at, then id) with FOR UPDATE SKIP LOCKED, so concurrent claims
 * never wait on each other and never get the same task.  A candidate that
 * names budgets is admitted only if every budget, locked in name order,
 * has room for its cost; the charge is made in the same statement.  The
 * chosen rows then become 'running' with attempts + 1 and a lease, and
 * each gets a signed grant naming that attempt.
 *
 * Every later write of a worker is guarded by (id, attempts, status =
 * 'running'): a grant for an attempt that is no longer the running one
 * changes nothing.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
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

#include "floor.h"
#include "schedq.h"
#include "shmem.h"
#include "wake.h"

/* Backoff of fail(): 1 s after the first attempt, doubling, capped. */
#define BACKOFF_BASE_USECS USECS_PER_SEC
#define BACKOFF_MAX_USECS  (3600 * USECS_PER_SEC)

static SPIPlanPtr plan_candidates[4];
static SPIPlanPtr plan_admit_budgets = NULL;
static SPIPlanPtr plan_take = NULL;
static SPIPlanPtr plan_heartbeat = NULL;
static SPIPlanPtr plan_complete = NULL;
static SPIPlanPtr plan_complete_tid = NULL;
static SPIPlanPtr plan_complete_many = NULL;
static SPIPlanPtr plan_fail_lock = NULL;
static SPIPlanPtr plan_fail_final = NULL;
static SPIPlanPtr plan_fail_retry = NULL;

/* Which queue filter a claim's candidate query has. */
typedef enum ClaimQueueFilter
{
	CLAIM_ALL_QUEUES,
	CLAIM_ONE_QUEUE,
	CLAIM_SOME_QUEUES,
	CLAIM_SQL_TASKS /* the built-in executor: SQL tasks only */
} ClaimQueueFilter;

/*
 * The candidate query, one variant per queue filter.  While the database
 * has no budget at all, claim runs it as the CTE of one UPDATE that takes
 * the tasks (claim_direct_sql), sparing every claim a statement and the
 * budget tables.  With budgets, it runs alone with a budget pre-filter,
 * which keeps tasks whose budgets are full from taking the places of
 * claimable ones; admission (claim_admit_budgets) is what enforces the
 * budgets, so a stale "no budgets" answer costs order, never a limit.
 *
 * These are generic plans (spi.c), so they are written for the planner's
 * estimates: "required_caps = '{}' OR ..." and the NOT EXISTS have
 * statistics to go by, where "required_caps <@ $3" alone and
 * "queue <> ALL (...)" are guessed so selective that the planner would
 * sort the whole available set instead of walking task_available_idx.
 */
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
#define CLAIM_SQL_ONLY " AND t.kind = 'sql' AND 'sql' = ANY (t.required_caps)"

static const char *const claim_candidate_sql[4] = {
	CLAIM_CANDIDATES(CLAIM_ALL_SQL, CLAIM_NOT_PAUSED, CLAIM_BUDGET_FILTER),
	CLAIM_CANDIDATES(CLAIM_ONE_SQL, CLAIM_NOT_PAUSED, CLAIM_BUDGET_FILTER),
	CLAIM_CANDIDATES(CLAIM_SOME_SQL, CLAIM_NOT_PAUSED, CLAIM_BUDGET_FILTER),
	CLAIM_CANDIDATES(CLAIM_SQL_ONLY, CLAIM_NOT_PAUSED, CLAIM_BUDGET_FILTER),
};

/* Whether this database has budgets, as of budget_generation. */
static uint64 claim_budget_generation = 0;
static bool	  claim_budgets_exist = true;

/*
 * Does this database have any budget?  Asked again only after a
 * set_budget has committed somewhere (budget_generation in shared memory).
 */
static bool
claim_have_budgets(void)
{
	uint64 generation = pg_atomic_read_u64(&schedq_shared->budget_generation);

	if (generation != claim_budget_generation)
	{
		if (SPI_execute("SELECT FROM schedq.budget LIMIT 1", false, 1) !=
			SPI_OK_SELECT)
			elog(ERROR, "could not look for budgets");
		claim_budgets_exist = SPI_processed > 0;
		claim_budget_generation = generation;
	}
	return claim_budgets_exist;
}

/*
 * Whether any queue of this database is paused, as of queue_generation.
 * The generation is bumped both before and after a transaction that
 * changed schedq.queue commits (claim_queue_xact_callback), and read here
 * before the look: so a claim that starts after such a commit returned
 * looks again, and sees it; only a claim overlapping the commit may act
 * on the state before it.
 */
static uint64 claim_queue_generation = 0;
static bool	  claim_paused_exist = true;
static bool	  claim_queue_changed = false;
static bool	  claim_queue_callback_registered = false;

static bool
claim_have_paused_queues(void)
{
	uint64 generation = pg_atomic_read_u64(&schedq_shared->queue_generation);

	if (generation != claim_queue_generation)
	{
		if (SPI_execute("SELECT FROM schedq.queue WHERE paused LIMIT 1", false,
						1) != SPI_OK_SELECT)
			elog(ERROR, "could not look for paused queues");
		claim_paused_exist = SPI_processed > 0;
		claim_queue_generation = generation;
	}
	return claim_paused_exist;
}

static void
claim_queue_xact_callback(XactEvent event, void *arg)
{
	if (!claim_queue_changed)
		return;
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
			pg_atomic_fetch_add_u64(&schedq_shared->queue_generation, 1);
			break;
		case XACT_EVENT_PRE_PREPARE:
			/* its commit would come from a session that bumps nothing */
			ereport(ERROR, errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("cannot PREPARE a transaction that paused or "
						   "resumed a queue"));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			pg_atomic_fetch_add_u64(&schedq_shared->queue_generation, 1);
			claim_queue_changed = false;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			claim_queue_changed = false;
			break;
		default:
			break;
	}
}

PG_FUNCTION_INFO_V1(schedq_queue_changed_trigger);

/*
 * Statement trigger on schedq.queue (pause_queue, resume_queue, or DML by
 * hand): make claims look at the paused queues again once this commits.
 */
Datum
schedq_queue_changed_trigger(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "schedq._queue_changed() must be called as a trigger");
	/* without the library preloaded no claim runs (a restore may, though) */
	if (schedq_shared == NULL)
		return PointerGetDatum(NULL);
	if (!claim_queue_callback_registered)
	{
		RegisterXactCallback(claim_queue_xact_callback, NULL);
		claim_queue_callback_registered = true;
	}
	claim_queue_changed = true;
	return PointerGetDatum(NULL);
}

/*
 * Charge one task's cost to each of its budgets, all or nothing.  The
 * budget rows are locked in name order, so concurrent claims serialize on
 * them without deadlocking, and the room is checked on the locked
 * (latest) values.  A budget whose period has passed starts empty again.
 */
static bool
claim_admit_budgets(Datum budgets, Datum cost)
{
	static const Oid types[] = { TEXTARRAYOID, NUMERICOID };
	Datum			 values[2] = { budgets, cost };
	bool			 isnull;

	schedq_execute(
		schedq_plan(
			&plan_admit_budgets,
			"WITH locked AS ("
			"   SELECT b.name, b.period_start + b.period <= now() AS refill,"
			"          b.used, b.hard_limit, b.period"
			"   FROM schedq.budget b WHERE b.name = ANY ($1)"
			"   ORDER BY b.name FOR UPDATE),"
			" verdict AS ("
			"   SELECT count(*) = (SELECT count(DISTINCT x) FROM unnest($1) x)"
			"      AND bool_and(CASE WHEN refill THEN 0 ELSE used END + $2"
			"                   <= hard_limit) AS ok"
			"   FROM locked),"
			" charge AS ("
			"   UPDATE schedq.budget b"
			"   SET used = CASE WHEN l.refill THEN 0 ELSE l.used END + $2,"
			"       period_start = CASE WHEN l.refill"
			"         THEN date_bin(l.period, now(), '2000-01-01 00:00:00+00')"
			"         ELSE b.period_start END"
			"   FROM locked l, verdict v"
			"   WHERE b.name = l.name AND v.ok)"
			" SELECT COALESCE(ok, false) FROM verdict",
			2, types),
		values, NULL, 0, SPI_OK_SELECT);
	return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
									  SPI_tuptable->tupdesc, 1, &isnull));
}

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
	int64			 wait_us;
	ReturnSetInfo	*rsinfo;
} ClaimArgs;

/*
 * Columns of a claimed task, as both claim paths return them; the last,
 * where the claimed row version is, goes to the claimed-row cache below.
 */
#define CLAIM_RETURNING                                                        \
	" RETURNING t.id, t.attempts, t.queue, t.kind, t.payload, t.priority,"     \
	" t.run_id, t.lease_expires_at, t.run_at, t.ctid"

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

/* Remember a row claim just returned (CLAIM_RETURNING's columns). */
static void
claimed_row_remember(HeapTuple row, TupleDesc desc)
{
	bool		isnull;
	int64		task_id = DatumGetInt64(SPI_getbinval(row, desc, 1, &isnull));
	ClaimedRow *slot = claimed_row_slot(task_id);

	slot->task_id = task_id;
	slot->attempt = DatumGetInt32(SPI_getbinval(row, desc, 2, &isnull));
	ItemPointerCopy((ItemPointer) DatumGetPointer(
						SPI_getbinval(row, desc, 10, &isnull)),
					&slot->tid);
}
#define CLAIM_SET                                                              \
	" SET status = 'running', attempts = t.attempts + 1, claimed_by = $6,"     \
	"     lease = $7, lease_expires_at = least($8 + $7, $8 + t.timeout),"      \
	"     started_at = $8, deadline = $8 + t.timeout"

static const Oid claim_types[] = { INT4OID,		   TEXTARRAYOID,   TEXTARRAYOID,
								   OIDOID,		   BOOLOID,		   TEXTOID,
								   INTERVALOID,	   TIMESTAMPTZOID, INT8OID,
								   TIMESTAMPTZOID, INT8OID };

/*
 * The one-statement claim: candidates locked and taken at once.  The CTE
 * is joined through "= ANY (ARRAY(...))", an index scan of the primary
 * key whatever the planner guesses of the CTE's size.  Indexed by
 * [whether any queue is paused][queue filter]: while no queue is paused
 * the candidate scan needs no anti-join with schedq.queue.
 */
#define CLAIM_DIRECT(queue_filter, paused_filter)                              \
	"WITH c AS (" CLAIM_CANDIDATES(                                            \
		queue_filter, paused_filter,                                           \
		"") ")"                                                                \
			" UPDATE schedq.task t" CLAIM_SET                                  \
			" WHERE t.id = ANY (ARRAY(SELECT c.id FROM c))" CLAIM_RETURNING
static const char *const claim_direct_sql[2][4] = {
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
static SPIPlanPtr plan_direct[2][4];

/*
 * Claim order of two returned rows: priority DESC, run_at, id.
 */
static TupleDesc claim_cmp_desc;

static int
claim_cmp(const void *a, const void *b)
{
	HeapTuple	ta = *(const HeapTuple *) a;
	HeapTuple	tb = *(const HeapTuple *) b;
	TupleDesc	desc = claim_cmp_desc;
	bool		isnull;
	int32		pa = DatumGetInt32(SPI_getbinval(ta, desc, 6, &isnull));
	int32		pb = DatumGetInt32(SPI_getbinval(tb, desc, 6, &isnull));
	TimestampTz ra = DatumGetTimestampTz(SPI_getbinval(ta, desc, 9, &isnull));
	TimestampTz rb = DatumGetTimestampTz(SPI_getbinval(tb, desc, 9, &isnull));
	int64		ia = DatumGetInt64(SPI_getbinval(ta, desc, 1, &isnull));
	int64		ib = DatumGetInt64(SPI_getbinval(tb, desc, 1, &isnull));

	if (pa != pb)
		return pa > pb ? -1 : 1;
	if (ra != rb)
		return ra < rb ? -1 : 1;
	return ia < ib ? -1 : (ia > ib ? 1 : 0);
}

/*
 * Return the rows of SPI_tuptable (claimed tasks) in claim order, each
 * with its signed grant.
 */
static void
claim_emit(ClaimArgs *args, int n)
{
	TupleDesc  desc = SPI_tuptable->tupdesc;
	HeapTuple *rows = palloc(sizeof(HeapTuple) * n);

	memcpy(rows, SPI_tuptable->vals, sizeof(HeapTuple) * n);
	claim_cmp_desc = desc;
	qsort(rows, n, sizeof(HeapTuple), claim_cmp);
	for (int i = 0; i < n; i++)
	{
		Datum out[9];
		bool  outnull[9];

		for (int c = 0; c < 8; c++)
			out[c] = SPI_getbinval(rows[i], desc, c + 1, &outnull[c]);
		out[8] = CStringGetTextDatum(
			schedq_grant_sign(DatumGetInt64(out[0]), DatumGetInt32(out[1]),
							  DatumGetTimestampTz(out[7])));
		outnull[8] = false;
		claimed_row_remember(rows[i], desc);
		tuplestore_putvalues(args->rsinfo->setResult, args->rsinfo->setDesc,
							 out, outnull);
	}
	schedq_count(METRIC_TASKS_CLAIMED, n);
}

/*
 * One look for claimable tasks; claims and returns what it finds.
 * Without budgets in the database it is one statement; with budgets, the
 * candidates are locked first, admitted one by one, then taken.
 */
static int
claim_once(ClaimArgs *args)
{
	Datum values[11];
	char  nulls[11] = { ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ' };
	SchedqClaimKey floor;
	SPITupleTable *candidates;
	Datum		  *ids;
	int			   found;
	int			   taken = 0;

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
	/* start at the claim floor (floor.c) */
	schedq_floor_probe_if_due();
	schedq_floor_get(&floor);
	values[8] = Int64GetDatum(floor.prio);
	values[9] = TimestampTzGetDatum(floor.run_at);
	values[10] = Int64GetDatum(floor.id);

	if (!claim_have_budgets())
	{
		int paused = claim_have_paused_queues() ? 1 : 0;

		taken =
			schedq_execute(schedq_plan(&plan_direct[paused][args->filter],
									   claim_direct_sql[paused][args->filter],
									   11, claim_types),
						   values, nulls, 0, SPI_OK_UPDATE_RETURNING);
		if (taken > 0)
			claim_emit(args, taken);
		return taken;
	}

	found = schedq_execute(schedq_plan(&plan_candidates[args->filter],
									   claim_candidate_sql[args->filter], 11,
									   claim_types),
						   values, nulls, 0, SPI_OK_SELECT);
	candidates = SPI_tuptable;
	ids = palloc(sizeof(Datum) * Max(found, 1));
	for (int i = 0; i < found; i++)
	{
		bool  isnull;
		Datum budgets =
			SPI_getbinval(candidates->vals[i], candidates->tupdesc, 2, &isnull);
		ArrayType *arr = DatumGetArrayTypeP(budgets);

		if (ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr)) > 0 &&
			!claim_admit_budgets(budgets, SPI_getbinval(candidates->vals[i],
														candidates->tupdesc, 3,
														&isnull)))
		{
			/* Another claim used the room between our look and our lock. */
			schedq_count(METRIC_CLAIM_CONTENTION, 1);
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
	if (schedq_execute(schedq_plan(&plan_take,
								   "UPDATE schedq.task t" CLAIM_SET
								   " WHERE t.id = ANY ($1)" CLAIM_RETURNING,
								   8,
								   (Oid[]){ INT8ARRAYOID, TEXTARRAYOID,
											TEXTARRAYOID, OIDOID, BOOLOID,
											TEXTOID, INTERVALOID,
											TIMESTAMPTZOID }),
					   values, nulls, 0, SPI_OK_UPDATE_RETURNING) != taken)
		elog(ERROR, "claimed %d tasks but could not take them all", taken);
	claim_emit(args, taken);
	return taken;
}

/*
 * Sleep until a task this claim could take becomes available, or wait_us
 * has passed, claiming what comes.  Registers as a waiter *before* each
 * look, so a task made available after the look wakes it.  Holds no row
 * lock while it sleeps: a look that finds nothing locks nothing.
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
			long timeout_ms;
			int	 rc;

			schedq_waiter_register(args->queues == (Datum) 0 ?
									   NULL :
									   DatumGetArrayTypeP(args->queues),
								   DatumGetArrayTypeP(args->caps), false);
			taken = claim_once(args);
			if (taken > 0)
				break;
			timeout_ms = TimestampDifferenceMilliseconds(GetCurrentTimestamp(),
														 deadline);
			if (timeout_ms <= 0)
				break;
			rc = WaitLatch(MyLatch,
						   WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						   timeout_ms, PG_WAIT_EXTENSION);
			if (rc & WL_LATCH_SET)
				schedq_count(METRIC_CLAIM_WAKEUPS, 1);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
		}
	}
	PG_FINALLY();
	{
		schedq_waiter_unregister();
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
	Datum	   sql = CStringGetTextDatum("sql");

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
	if (PG_ARGISNULL(0))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("worker must not be null"));
	args.worker = PG_GETARG_DATUM(0);
	if (PG_ARGISNULL(2))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("caps must not be null"),
				errhint(
					"Pass an empty array for a worker without capabilities."));
	args.caps = PG_GETARG_DATUM(2);
	if (array_contains_nulls(DatumGetArrayTypeP(args.caps)))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("caps must not contain nulls"));
	if (PG_ARGISNULL(3))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("n must not be null"));
	args.n = PG_GETARG_INT32(3);
	if (args.n <= 0 || args.n > SCHEDQ_MAX_CLAIM_BATCH)
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("n must be between 1 and %d", SCHEDQ_MAX_CLAIM_BATCH));
	if (PG_ARGISNULL(4))
	{
		args.lease = palloc0(sizeof(Interval));
		args.lease->time = (int64) schedq_default_lease_s * USECS_PER_SEC;
	}
	else
	{
		args.lease = PG_GETARG_INTERVAL_P(4);
		if (schedq_interval_usecs(args.lease) <= 0)
			ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("lease must be positive"));
	}
	if (PG_ARGISNULL(5))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("wait must not be null"));
	args.wait_us = schedq_interval_usecs(PG_GETARG_INTERVAL_P(5));
	if (args.wait_us < 0)
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("wait must not be negative"));
	if (args.wait_us > 0 && IsolationUsesXactSnapshot())
		ereport(
			ERROR, errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			errmsg(
				"claim with wait requires the READ COMMITTED isolation level"),
			errdetail(
				"A transaction snapshot would never see tasks that become available while waiting."));
	args.filter = CLAIM_ALL_QUEUES;
	if (!PG_ARGISNULL(1))
	{
		ArrayType *arr = PG_GETARG_ARRAYTYPE_P(1);
		int		   nqueues = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));

		if (array_contains_nulls(arr))
			ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					errmsg("queues must not contain nulls"));
		args.queues = PointerGetDatum(arr);
		args.filter =
			(nqueues == 1 && ARR_NDIM(arr) == 1 && ARR_LBOUND(arr)[0] == 1) ?
				CLAIM_ONE_QUEUE :
				CLAIM_SOME_QUEUES;
	}

	InitMaterializedSRF(fcinfo, 0);
	schedq_call_begin(&call);
	if (claim_once(&args) == 0 && args.wait_us > 0)
		(void) claim_wait(&args);
	schedq_call_end(&call);
	return (Datum) 0;
}

/*
 * Read and check the grant argument shared by heartbeat, complete and
 * fail.
 */
static void
work_grant_arg(FunctionCallInfo fcinfo, SchedqGrant *grant)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("token must not be null"));
	schedq_grant_require(text_to_cstring(PG_GETARG_TEXT_PP(0)), grant);
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
	static const Oid types[] = { INT8OID, INT4OID, INTERVALOID };
	SchedqGrant		 grant;
	SchedqCall		 call;
	Datum			 values[3];
	char			 nulls[3] = { ' ', ' ', ' ' };
	bool			 isnull = true;
	Datum			 expires = (Datum) 0;

	work_grant_arg(fcinfo, &grant);
	if (PG_ARGISNULL(1))
		nulls[2] = 'n';
	else
	{
		values[2] = PG_GETARG_DATUM(1);
		if (schedq_interval_usecs(PG_GETARG_INTERVAL_P(1)) <= 0)
			ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("extend must be positive"));
	}
	values[0] = Int64GetDatum(grant.task_id);
	values[1] = Int32GetDatum(grant.attempt);

	schedq_call_begin(&call);
	if (schedq_execute(
			schedq_plan(
				&plan_heartbeat,
				"UPDATE schedq.task"
				" SET lease_expires_at = least(greatest(lease_expires_at,"
				"     now() + COALESCE($3, lease)), deadline)"
				" WHERE id = $1 AND attempts = $2 AND status = 'running'"
				" RETURNING lease_expires_at",
				3, types),
			values, nulls, 0, SPI_OK_UPDATE_RETURNING) == 1)
		expires = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
								&isnull);
	schedq_call_end(&call);

	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(expires);
}

PG_FUNCTION_INFO_V1(schedq_complete);

/*
 * schedq.complete(token, result): the attempt succeeded.  False, changing
 * nothing, when the grant's attempt is no longer the running one.
 */
Datum
schedq_complete(PG_FUNCTION_ARGS)
{
	static const Oid types[] = { INT8OID, INT4OID, JSONBOID, TIDOID };
	SchedqGrant		 grant;
	SchedqCall		 call;
	Datum			 values[4];
	char			 nulls[4] = { ' ', ' ', PG_ARGISNULL(1) ? 'n' : ' ', ' ' };
	ClaimedRow		*slot;
	bool			 done = false;

	work_grant_arg(fcinfo, &grant);
	values[0] = Int64GetDatum(grant.task_id);
	values[1] = Int32GetDatum(grant.attempt);
	values[2] = PG_ARGISNULL(1) ? (Datum) 0 : PG_GETARG_DATUM(1);

	slot = claimed_row_slot(grant.task_id);
	schedq_call_begin(&call);
	if (slot->task_id == grant.task_id && slot->attempt == grant.attempt)
	{
		values[3] = PointerGetDatum(&slot->tid);
		slot->task_id = 0;
		done = schedq_execute(
				   schedq_plan(&plan_complete_tid,
							   "UPDATE schedq.task"
							   " SET status = 'done', result = $3,"
							   "     finished_at = now()"
							   " WHERE ctid = $4 AND id = $1 AND attempts = $2"
							   "   AND status = 'running'",
							   4, types),
				   values, nulls, 0, SPI_OK_UPDATE) == 1;
	}
	if (!done)
		done =
			schedq_execute(
				schedq_plan(
					&plan_complete,
					"UPDATE schedq.task"
					" SET status = 'done', result = $3, finished_at = now()"
					" WHERE id = $1 AND attempts = $2 AND status = 'running'",
					3, types),
				values, nulls, 0, SPI_OK_UPDATE) == 1;
	schedq_call_end(&call);

	if (done)
		schedq_count(METRIC_TASKS_COMPLETED, 1);
	PG_RETURN_BOOL(done);
}

static int
work_cmp_int64(const void *a, const void *b)
{
	int64 x = *(const int64 *) a;
	int64 y = *(const int64 *) b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/* As many as one claim may return. */
#define COMPLETE_MANY_MAX 1000

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
	static const Oid types[] = { INT8ARRAYOID, INT4ARRAYOID, JSONBARRAYOID };
	SchedqCall		 call;
	Datum			*tokens;
	bool			*token_nulls;
	int				 n;
	Datum			*results = NULL;
	bool			*result_nulls = NULL;
	int				 nresults;
	Datum			*ids;
	Datum			*attempts;
	Datum			 values[3];
	char			 nulls[3] = { ' ', ' ', ' ' };
	int64			*done;
	bool			*used;
	int				 ndone;
	Datum			*out;

	if (PG_ARGISNULL(0))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("tokens must not be null"));
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(0), TEXTOID, -1, false,
					  TYPALIGN_INT, &tokens, &token_nulls, &n);
	if (n > COMPLETE_MANY_MAX)
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("complete_many takes at most %d tokens",
					   COMPLETE_MANY_MAX));
	if (!PG_ARGISNULL(1))
	{
		deconstruct_array(PG_GETARG_ARRAYTYPE_P(1), JSONBOID, -1, false,
						  TYPALIGN_INT, &results, &result_nulls, &nresults);
		if (nresults != n)
			ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("results must have one element per token"),
					errdetail("%d tokens, %d results.", n, nresults));
	}

	ids = palloc(sizeof(Datum) * Max(n, 1));
	attempts = palloc(sizeof(Datum) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		SchedqGrant grant;

		if (token_nulls[i])
			ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					errmsg("tokens must not contain nulls"));
		schedq_grant_require(TextDatumGetCString(tokens[i]), &grant);
		ids[i] = Int64GetDatum(grant.task_id);
		attempts[i] = Int32GetDatum(grant.attempt);
	}
	values[0] = PointerGetDatum(
		construct_array(ids, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	values[1] = PointerGetDatum(
		construct_array(attempts, n, INT4OID, 4, true, TYPALIGN_INT));
	if (results != NULL)
	{
		int lbound = 1; /* whatever the caller's array had */

		values[2] = PointerGetDatum(
			construct_md_array(results, result_nulls, 1, &n, &lbound, JSONBOID,
							   -1, false, TYPALIGN_INT));
	}
	else
		nulls[2] = 'n';
	/* here, not inside the call: SPI_finish frees what was made there */
	done = palloc(sizeof(int64) * Max(n, 1));

	schedq_call_begin(&call);
	/*
	 * One UPDATE through the primary key.  A task given twice takes its
	 * attempt and result from its first place (array_position).  The
	 * status test is written so that it does not match the predicate of
	 * task_running_idx: a generic plan would otherwise read every running
	 * task through that index to find these.
	 */
	ndone = schedq_execute(
		schedq_plan(&plan_complete_many,
					"UPDATE schedq.task t"
					" SET status = 'done', finished_at = now(),"
					"     result = ($3)[array_position($1, t.id)]"
					" WHERE t.id = ANY ($1)"
					"   AND t.attempts = ($2)[array_position($1, t.id)]"
					"   AND COALESCE(t.status, '') = 'running'"
					" RETURNING t.id",
					3, types),
		values, nulls, 0, SPI_OK_UPDATE_RETURNING);
	for (int i = 0; i < ndone; i++)
	{
		bool isnull;

		done[i] =
			DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
										SPI_tuptable->tupdesc, 1, &isnull));
	}
	schedq_call_end(&call);

	/* true at the first place of each task that was completed */
	qsort(done, ndone, sizeof(int64), work_cmp_int64);
	used = palloc0(sizeof(bool) * Max(ndone, 1));
	out = palloc(sizeof(Datum) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		int64  id = DatumGetInt64(ids[i]);
		int64 *hit = bsearch(&id, done, ndone, sizeof(int64), work_cmp_int64);

		out[i] = BoolGetDatum(hit != NULL && !used[hit - done]);
		if (hit != NULL)
			used[hit - done] = true;
	}
	if (ndone > 0)
		schedq_count(METRIC_TASKS_COMPLETED, ndone);
	PG_RETURN_ARRAYTYPE_P(
		construct_array(out, n, BOOLOID, 1, true, TYPALIGN_CHAR));
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
 * by (id, attempt, status = 'running'); returns the new status, or
 * "stale" when that attempt is no longer the running one.  Shared by
 * fail() and the reaper.  Inside the caller's SPI connection.
 */
const char *
schedq_fail_attempt(int64 task_id, int32 attempt, const char *error,
					int64 retry_us, bool permanent)
{
	static const Oid lock_types[] = { INT8OID, INT4OID };
	static const Oid final_types[] = { INT8OID, TEXTOID };
	static const Oid retry_types[] = { INT8OID, TEXTOID, INT8OID, TEXTOID };
	Datum			 values[4];
	HeapTuple		 tuple;
	TupleDesc		 desc;
	bool			 isnull;
	bool			 exhausted;
	int32			 used;
	bool			 ungated;
	int64			 delay;
	const char		*status;

	values[0] = Int64GetDatum(task_id);
	values[1] = Int32GetDatum(attempt);
	if (schedq_execute(
			schedq_plan(
				&plan_fail_lock,
				"SELECT attempts - retry_base >= max_attempts,"
				"       attempts - retry_base,"
				"       lock_key IS NULL AND concurrency_key IS NULL"
				"       AND depends_on = '{}',"
				"       queue, required_caps"
				" FROM schedq.task"
				" WHERE id = $1 AND attempts = $2 AND status = 'running'"
				" FOR UPDATE",
				2, lock_types),
			values, NULL, 0, SPI_OK_SELECT) == 0)
		return "stale";

	tuple = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	exhausted = DatumGetBool(SPI_getbinval(tuple, desc, 1, &isnull));
	used = DatumGetInt32(SPI_getbinval(tuple, desc, 2, &isnull));
	ungated = DatumGetBool(SPI_getbinval(tuple, desc, 3, &isnull));

	values[1] = CStringGetTextDatum(error);
	if (permanent || exhausted)
	{
		schedq_execute(schedq_plan(&plan_fail_final,
								   "UPDATE schedq.task"
								   " SET status = 'failed', last_error = $2,"
								   "     finished_at = now()"
								   " WHERE id = $1",
								   2, final_types),
					   values, NULL, 0, SPI_OK_UPDATE);
		schedq_count(METRIC_TASKS_FAILED, 1);
		return "failed";
	}

	/*
	 * Retry at once as 'available' only when nothing would gate it;
	 * otherwise the promotion loop decides.
	 */
	delay = retry_us >= 0 ? retry_us : fail_backoff_usecs(used);
	status = (delay == 0 && ungated) ? "available" : "pending";
	if (delay == 0 && ungated)
		schedq_wake_claimers_at_commit(SPI_getvalue(tuple, desc, 4),
									   DatumGetArrayTypeP(
										   SPI_getbinval(tuple, desc, 5,
														 &isnull)),
									   PG_INT32_MAX, DT_NOBEGIN,
									   PG_INT64_MIN /* the head: a bound */);
	else
		schedq_wake_scheduler_at_commit();
	values[2] = Int64GetDatum(delay);
	values[3] = CStringGetTextDatum(status);
	schedq_execute(
		schedq_plan(&plan_fail_retry,
					"UPDATE schedq.task"
					" SET status = $4, last_error = $2,"
					"     run_at = now() + make_interval(secs => $3 / 1e6),"
					"     claimed_by = NULL, lease_expires_at = NULL,"
					"     deadline = NULL"
					" WHERE id = $1",
					4, retry_types),
		values, NULL, 0, SPI_OK_UPDATE);
	schedq_count(METRIC_TASKS_RETRIED, 1);
	return status;
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
	SchedqGrant grant;
	SchedqCall	call;
	int64		retry_us = -1;
	const char *status;

	work_grant_arg(fcinfo, &grant);
	if (PG_ARGISNULL(1))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("error must not be null"));
	if (PG_ARGISNULL(3))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("permanent must not be null"));
	if (!PG_ARGISNULL(2))
	{
		retry_us = schedq_interval_usecs(PG_GETARG_INTERVAL_P(2));
		if (retry_us < 0)
			ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("retry_in must not be negative"));
	}

	schedq_call_begin(&call);
	status = schedq_fail_attempt(grant.task_id, grant.attempt,
								 text_to_cstring(PG_GETARG_TEXT_PP(1)),
								 retry_us, PG_GETARG_BOOL(3));
	schedq_call_end(&call);
	PG_RETURN_TEXT_P(cstring_to_text(status));
}
