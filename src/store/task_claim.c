/*-------------------------------------------------------------------------
 * store/task_claim.c
 *	  The claim: the claim rule (which available tasks a worker may take),
 *	  written once as SQL and once as its C twin; the claim statements and
 *	  the direct claim; and the looks of a waiting claim.
 *
 * A claim picks the head of the available set in claim order (priority,
 * then run_at, then id) with FOR UPDATE SKIP LOCKED, so concurrent claims
 * never wait on each other and never get the same task.  A candidate that
 * names budgets is admitted only if every budget, locked in name order,
 * has room for its cost; the charge is made in the same statement
 * (store/budgets.c).  The chosen rows then become 'running' with
 * attempts + 1 and a lease.  A claim starts its index scan at the claim
 * floor (store/floor.c).
 *
 * Three ways, the cheapest the database allows:
 *	- no budget and no paused queue: the direct claim, without the
 *	  executor (claim_direct below; it may decline, store/direct.h);
 *	- no budget: one statement, the candidates as the CTE of one UPDATE;
 *	- budgets: the candidates locked first, admitted one by one, then
 *	  taken.  A stale "no budgets" answer (the cache of store/budgets.c)
 *	  costs order, never a limit: admission is what enforces the budgets.
 *
 * These are generic plans (shared/plan.c), so they are written for the
 * planner's estimates: "required_caps = '{}' OR ..." and the NOT EXISTS
 * have statistics to go by, where "required_caps <@ $3" alone and
 * "queue <> ALL (...)" are guessed so selective that the planner would
 * sort the whole available set instead of walking task_available_idx.
 *
 * A waiting claim's look (await_task) is the claim rule for one task,
 * locking what it finds FOR KEY SHARE SKIP LOCKED so that a task a claim
 * in progress holds is not reported.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "shared/metrics.h"
#include "shared/plan.h"
#include "shared/sqlslots.h"
#include "store/budgets.h"
#include "store/direct_int.h"
#include "store/queues.h"
#include "store/task.h"
#include "store/task_claim.h"
#include "store/work_grants.h"

/*
 * The parameters of every claim statement: $1 n, $2 queues, $3 caps,
 * $4 caller, $5 admin, $6 worker, $7 lease, $8 the clock, $9-$11 the
 * claim floor, $12 the claim's nonce, $13 (SQL tasks only) the tasks the
 * executors are still running, $14 the owners the caller may work for by
 * a work grant (store/work_grants.c).  A statement need not use them all.
 */
#define CLAIM_NPARAMS 14
#define CLAIM_TYPES                                                            \
	INT4OID, TEXTARRAYOID, TEXTARRAYOID, OIDOID, BOOLOID, TEXTOID,             \
		INTERVALOID, TIMESTAMPTZOID, INT8OID, TIMESTAMPTZOID, INT8OID,         \
		INT8OID, INT8ARRAYOID, OIDARRAYOID

/* The queue filters of the rule, by SchedqClaimFilter. */
#define CLAIM_ALL_SQL  ""
#define CLAIM_ONE_SQL  " AND t.queue = ($2::text[])[1]"
#define CLAIM_SOME_SQL " AND t.queue = ANY ($2::text[])"
#define CLAIM_SQL_ONLY                                                         \
	" AND t.kind = '" TASK_SQL "' AND '" TASK_SQL "' = ANY (t.required_caps)"  \
	" AND t.id <> ALL ($13)"

#define CLAIM_SQL_ONLY_READY                                                   \
	" AND t.kind = '" TASK_SQL "' AND '" TASK_SQL "' = ANY (t.required_caps)"  \
	" AND t.id <> ALL ($2)"

#define CLAIM_NOT_PAUSED                                                       \
	" AND NOT EXISTS (SELECT FROM schedq.queue q"                              \
	"                 WHERE q.name = t.queue AND q.paused)"

/*
 * The same for the one queue of CLAIM_ONE_SQL, asked once: correlated,
 * the anti-join's estimate (the queue compared with the same parameter on
 * both sides) kept a single row, so the plan did not expect its LIMIT to
 * stop the scan early, and could read and sort every available task.
 */
#define CLAIM_ONE_NOT_PAUSED                                                   \
	" AND NOT EXISTS (SELECT FROM schedq.queue q"                              \
	"                 WHERE q.name = ($2::text[])[1] AND q.paused)"

/*
 * The claim rule: the tasks of schedq.task t a claim may take, from the
 * claim floor on, in claim order.  Its C twin is claim_rule_holds.
 */
#define CLAIM_RULE(queue_filter, paused_filter, budget_filter)                 \
	" WHERE t.status = 'available'" queue_filter                               \
	" AND (t.required_caps = '{}' OR t.required_caps <@ $3)"                   \
	" AND ($5 OR t.owner::oid = ANY ($14)"                                     \
	"      OR pg_has_role($4, t.owner::oid, 'USAGE'))" paused_filter           \
		budget_filter                                                          \
	" AND (-(t.priority::bigint), t.run_at, t.id) >= ($9, $10, $11)"           \
	" ORDER BY -(t.priority::bigint), t.run_at, t.id"

#define CLAIM_CANDIDATES(queue_filter, paused_filter, budget_filter)           \
	"SELECT t.id, t.budgets, t.cost FROM schedq.task t" CLAIM_RULE(            \
		queue_filter, paused_filter,                                           \
		budget_filter) " LIMIT $1"                                             \
					   " FOR UPDATE OF t SKIP LOCKED"

/* The columns of a claimed task, CLAIMED_COLUMNS of them, then its ctid. */
#define CLAIM_RETURNING                                                        \
	" RETURNING t.id, t.attempts, t.queue, t.kind, t.payload, t.priority,"     \
	" t.run_id, t.lease_expires_at, t.run_at, t.ctid"

/* What a claim sets; claim_take is its C twin. */
#define CLAIM_SET                                                              \
	" SET status = 'running', attempts = t.attempts + 1, claimed_by = $6,"     \
	"     lease = $7, lease_expires_at = least($8 + $7, $8 + t.timeout),"      \
	"     started_at = $8, deadline = $8 + t.timeout, claim_nonce = $12"

/*
 * The candidates of a claim while budgets exist, or on a shard: a task
 * whose budgets do not all exist with room is passed over.
 */
#define CLAIM_BUDGETED(queue_filter, paused_filter)                            \
	SCHEDQ_QUERY(CLAIM_CANDIDATES(queue_filter, paused_filter,                 \
								  TASK_BUDGET_ROOM_SQL),                       \
				 CLAIM_TYPES)

static SchedqQuery claim_candidates[CLAIM_NUM_FILTERS] = {
	CLAIM_BUDGETED(CLAIM_ALL_SQL, CLAIM_NOT_PAUSED),
	CLAIM_BUDGETED(CLAIM_ONE_SQL, CLAIM_ONE_NOT_PAUSED),
	CLAIM_BUDGETED(CLAIM_SOME_SQL, CLAIM_NOT_PAUSED),
	CLAIM_BUDGETED(CLAIM_SQL_ONLY, CLAIM_NOT_PAUSED),
};

/* The budgeted claim's second statement: $1 the admitted ids. */
static SchedqQuery claim_take_admitted =
	SCHEDQ_QUERY("UPDATE schedq.task t" CLAIM_SET
				 " WHERE t.id = ANY ($1)" CLAIM_RETURNING,
				 INT8ARRAYOID, TEXTARRAYOID, TEXTARRAYOID, OIDOID, BOOLOID,
				 TEXTOID, INTERVALOID, TIMESTAMPTZOID, INT8OID, TIMESTAMPTZOID,
				 INT8OID, INT8OID, INT8ARRAYOID, OIDARRAYOID);

/*
 * The one-statement claim: candidates locked and taken at once.  The CTE
 * is joined through "= ANY (ARRAY(...))", an index scan of the primary
 * key whatever the planner guesses of the CTE's size.  Indexed by
 * [whether any queue is paused][queue filter]: while no queue is paused
 * the candidate scan needs no anti-join with schedq.queue.
 */
#define CLAIM_ONE_STATEMENT(queue_filter, paused_filter)                         \
	SCHEDQ_QUERY(                                                                \
		"WITH c AS (" CLAIM_CANDIDATES(                                          \
			queue_filter, paused_filter,                                         \
			"") ")"                                                              \
				" UPDATE schedq.task t" CLAIM_SET                                \
				" WHERE t.id = ANY (ARRAY(SELECT c.id FROM c))" CLAIM_RETURNING, \
		CLAIM_TYPES)

static SchedqQuery claim_statement[2][CLAIM_NUM_FILTERS] = {
	{
		CLAIM_ONE_STATEMENT(CLAIM_ALL_SQL, ""),
		CLAIM_ONE_STATEMENT(CLAIM_ONE_SQL, ""),
		CLAIM_ONE_STATEMENT(CLAIM_SOME_SQL, ""),
		CLAIM_ONE_STATEMENT(CLAIM_SQL_ONLY, ""),
	},
	{
		CLAIM_ONE_STATEMENT(CLAIM_ALL_SQL, CLAIM_NOT_PAUSED),
		CLAIM_ONE_STATEMENT(CLAIM_ONE_SQL, CLAIM_ONE_NOT_PAUSED),
		CLAIM_ONE_STATEMENT(CLAIM_SOME_SQL, CLAIM_NOT_PAUSED),
		CLAIM_ONE_STATEMENT(CLAIM_SQL_ONLY, CLAIM_NOT_PAUSED),
	},
};

/*
 * The statements below come in pairs, [whether budgets are checked]: as
 * the claim of the same backend would, by the same cached answer to "are
 * there budgets?" (store/budgets.c), so that a look never finds what that
 * claim would pass over, nor misses what it would take.
 */

/* A waiting claim's look: the rule for one task, taking nothing. */
#define CLAIM_LOOK(queue_filter, paused_filter, budget_filter)                 \
	SCHEDQ_QUERY("SELECT FROM schedq.task t" CLAIM_RULE(                       \
					 queue_filter, paused_filter,                              \
					 budget_filter) " LIMIT 1 FOR KEY SHARE OF t SKIP LOCKED", \
				 CLAIM_TYPES)
#define CLAIM_LOOKS(budget_filter)                                             \
	{                                                                          \
		CLAIM_LOOK(CLAIM_ALL_SQL, CLAIM_NOT_PAUSED, budget_filter),            \
			CLAIM_LOOK(CLAIM_ONE_SQL, CLAIM_ONE_NOT_PAUSED, budget_filter),    \
			CLAIM_LOOK(CLAIM_SOME_SQL, CLAIM_NOT_PAUSED, budget_filter),       \
			CLAIM_LOOK(CLAIM_SQL_ONLY, CLAIM_NOT_PAUSED, budget_filter),       \
	}

static SchedqQuery claim_look[2][CLAIM_NUM_FILTERS] = {
	CLAIM_LOOKS(""),
	CLAIM_LOOKS(TASK_BUDGET_ROOM_SQL),
};

/*
 * Is the task a wake-up named still there for some claim?  The wake-up
 * knows the task's queue by the hash of its name and its place in claim
 * order, whose id may be a lower bound (submit does not know it yet), so
 * this asks for an available task of that queue at that priority and
 * run_at from that id on: the task, or a sibling submitted with it, which
 * needs a taker as much.  An index probe of task_available_idx.
 * Parameters: $1 minus the priority, $2 run_at, $3 id, $4 queue hash.
 */
#define CLAIM_STILL_THERE(budget_filter)                                       \
	SCHEDQ_QUERY("SELECT FROM schedq.task t"                                   \
				 " WHERE t.status = 'available'"                               \
				 " AND -(t.priority::bigint) = $1 AND t.run_at = $2"           \
				 " AND t.id >= $3 AND hashtext(t.queue) = $4" CLAIM_NOT_PAUSED \
					 budget_filter " LIMIT 1",                                 \
				 INT8OID, TIMESTAMPTZOID, INT8OID, INT4OID)

static SchedqQuery claim_still_there[2] = {
	CLAIM_STILL_THERE(""),
	CLAIM_STILL_THERE(TASK_BUDGET_ROOM_SQL),
};

/*
 * How many SQL tasks the executors could claim now, at most $1: their
 * claim rule (CLAIM_SQL_ONLY, for any owner: they are superusers) without
 * the claim floor.  $2: the tasks executors still run.  The scheduler
 * starts an executor for each such task no idle executor will take.
 */
#define CLAIM_SQL_READY(budget_filter)                                         \
	SCHEDQ_QUERY("SELECT count(*) FROM (SELECT FROM schedq.task t"             \
				 " WHERE t.status = 'available'" CLAIM_SQL_ONLY_READY          \
				 " AND t.required_caps <@ ARRAY['" TASK_SQL                    \
				 "']" CLAIM_NOT_PAUSED budget_filter " LIMIT $1) s",           \
				 INT4OID, INT8ARRAYOID)

static SchedqQuery claim_sql_ready[2] = {
	CLAIM_SQL_READY(""),
	CLAIM_SQL_READY(TASK_BUDGET_ROOM_SQL),
};

/*
 * Are budgets checked?  As by the claims of this backend
 * (schedq_task_claim), and so by the looks that stand for them: always on
 * a shard, else while budgets exist.
 */
static int
claim_checks_budgets(void)
{
	return schedq_plan_shard() != 0 || schedq_budgets_any(false) ? 1 : 0;
}

/*
 * The parameters of a claim statement for this request; values[0] (n)
 * may be replaced by the caller.
 */
static void
claim_params(const SchedqClaimRequest *r, Datum *values, char *nulls)
{
	memset(nulls, ' ', CLAIM_NPARAMS);
	values[0] = Int32GetDatum(r->n);
	values[1] = PointerGetDatum(r->queues);
	nulls[1] = r->queues == NULL ? 'n' : ' ';
	values[2] = PointerGetDatum(r->caps);
	values[3] = ObjectIdGetDatum(r->caller);
	values[4] = BoolGetDatum(r->admin);
	values[5] = r->worker;
	nulls[5] = r->worker == (Datum) 0 ? 'n' : ' ';
	values[6] = PointerGetDatum(r->lease);
	nulls[6] = r->lease == NULL ? 'n' : ' ';
	values[7] = TimestampTzGetDatum(r->now);
	values[8] = Int64GetDatum(r->floor.prio);
	values[9] = TimestampTzGetDatum(r->floor.run_at);
	values[10] = Int64GetDatum(r->floor.id);
	values[11] = Int64GetDatum(r->nonce);
	/* SQL tasks an executor still runs (retried while it ignores a cancel) */
	values[12] =
		r->filter == CLAIM_SQL_TASKS ? schedq_sqlslots_busy_tasks() : (Datum) 0;
	nulls[12] = r->filter == CLAIM_SQL_TASKS ? ' ' : 'n';
	/* NULL: no grant (= ANY (NULL) admits no owner) */
	values[13] = r->admin ? (Datum) 0 : schedq_work_grants_array(r->caller);
	nulls[13] = values[13] == (Datum) 0 ? 'n' : ' ';
}

/*
 * The n rows of SPI_tuptable (claimed tasks, CLAIM_RETURNING's columns)
 * into rows[].
 */
void
schedq_task_claim_rows_from_spi(int n, SchedqClaimed *rows)
{
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
}

/*
 * A claim's arrays, taken apart once, for the C twin of the rule.
 */
typedef struct ClaimArrays
{
	Datum  queue; /* CLAIM_ONE_QUEUE: the queue */
	Datum *queues;
	bool  *queue_nulls;
	int	   nqueues;
	Datum *caps;
	bool  *cap_nulls;
	int	   ncaps;
	Datum *busy;
	bool  *busy_nulls;
	int	   nbusy;
	Oid	  *work_for; /* owners the caller may work for by a work grant */
	int	   nwork_for;
} ClaimArrays;

static void
claim_arrays(const SchedqClaimRequest *r, ClaimArrays *a)
{
	memset(a, 0, sizeof(*a));
	if (r->queues != NULL)
		deconstruct_array(r->queues, TEXTOID, -1, false, TYPALIGN_INT,
						  &a->queues, &a->queue_nulls, &a->nqueues);
	if (r->filter == CLAIM_ONE_QUEUE && a->nqueues > 0)
		a->queue = a->queues[0];
	deconstruct_array(r->caps, TEXTOID, -1, false, TYPALIGN_INT, &a->caps,
					  &a->cap_nulls, &a->ncaps);
	if (r->filter == CLAIM_SQL_TASKS)
		deconstruct_array(DatumGetArrayTypeP(schedq_sqlslots_busy_tasks()),
						  INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
						  &a->busy, &a->busy_nulls, &a->nbusy);
	if (!r->admin)
	{
		const Oid *owners = schedq_work_grants_owners(r->caller, &a->nwork_for);

		a->work_for = palloc(sizeof(Oid) * Max(a->nwork_for, 1));
		memcpy(a->work_for, owners, sizeof(Oid) * a->nwork_for);
	}
}

/*
 * CLAIM_RULE in C, for a row version in slot (but the floor and the
 * order, which the index scan applies, and the paused queues and budgets,
 * which the direct claim never meets): status 'available', the queue
 * filter (the scan key's queue too: this is also the recheck of a later
 * version), required_caps <@ caps, the owner, and for the executors' SQL
 * tasks kind 'sql' requiring 'sql' and not busy.
 */
static bool
claim_rule_holds(const SchedqClaimRequest *r, const ClaimArrays *a,
				 TupleTableSlot *slot)
{
	AttrNumber *att = schedq_direct_att;
	bool		isnull;
	Datum		queue;
	ArrayType  *required;
	Datum	   *elems;
	bool	   *nulls;
	int			nelems;
	Oid			owner;

	if (!schedq_direct_text_equals(slot_getattr(slot, att[TASK_COL_STATUS],
												&isnull),
								   "available"))
		return false;
	queue = slot_getattr(slot, att[TASK_COL_QUEUE], &isnull);
	if (r->queues != NULL &&
		!schedq_direct_text_in(queue, a->queues, a->queue_nulls, a->nqueues))
		return false;
	if (r->filter == CLAIM_SQL_TASKS)
	{
		int64 id = DatumGetInt64(slot_getattr(slot, att[TASK_COL_ID], &isnull));

		if (!schedq_direct_text_equals(slot_getattr(slot, att[TASK_COL_KIND],
													&isnull),
									   TASK_SQL))
			return false;
		for (int i = 0; i < a->nbusy; i++)
			if (!a->busy_nulls[i] && DatumGetInt64(a->busy[i]) == id)
				return false;
	}

	/* required_caps <@ caps: every element in caps, and none NULL */
	required = DatumGetArrayTypeP(
		slot_getattr(slot, att[TASK_COL_REQUIRED_CAPS], &isnull));
	if (ArrayGetNItems(ARR_NDIM(required), ARR_DIMS(required)) > 0 ||
		r->filter == CLAIM_SQL_TASKS)
	{
		Datum sql = CStringGetTextDatum(TASK_SQL);

		deconstruct_array(required, TEXTOID, -1, false, TYPALIGN_INT, &elems,
						  &nulls, &nelems);
		for (int i = 0; i < nelems; i++)
			if (nulls[i] || !schedq_direct_text_in(elems[i], a->caps,
												   a->cap_nulls, a->ncaps))
				return false;
		if (r->filter == CLAIM_SQL_TASKS &&
			!schedq_direct_text_in(sql, elems, nulls, nelems))
			return false;
	}

	if (r->admin)
		return true;
	owner = DatumGetObjectId(slot_getattr(slot, att[TASK_COL_OWNER], &isnull));
	for (int i = 0; i < a->nwork_for; i++)
		if (a->work_for[i] == owner)
			return true;
	return has_privs_of_role(r->caller, owner);
}

/*
 * claim_rule_holds in the per-tuple memory of the write: a scan over many
 * rows it turns down keeps nothing of them.
 */
static bool
claim_rule_holds_tuple(SchedqDirectWrite *dw, const SchedqClaimRequest *r,
					   const ClaimArrays *a, TupleTableSlot *slot)
{
	MemoryContext old =
		MemoryContextSwitchTo(GetPerTupleMemoryContext(dw->estate));
	bool holds = claim_rule_holds(r, a, slot);

	MemoryContextSwitchTo(old);
	ResetPerTupleExprContext(dw->estate);
	return holds;
}

/*
 * CLAIM_SET in C: make the locked row version in slot the claim's:
 * 'running', the next attempt, the lease.  Its CLAIM_RETURNING columns go
 * to *out.
 */
static void
claim_take(SchedqDirectWrite *dw, const SchedqClaimRequest *r,
		   TupleTableSlot *slot, SchedqClaimed *out)
{
	static const SchedqTaskColumn cols[] = {
		TASK_COL_STATUS,   TASK_COL_ATTEMPTS,		  TASK_COL_CLAIMED_BY,
		TASK_COL_LEASE,	   TASK_COL_LEASE_EXPIRES_AT, TASK_COL_STARTED_AT,
		TASK_COL_DEADLINE, TASK_COL_CLAIM_NONCE,
	};
	static const SchedqTaskColumn returned[CLAIMED_COLUMNS] = {
		TASK_COL_ID,	 TASK_COL_ATTEMPTS,			TASK_COL_QUEUE,
		TASK_COL_KIND,	 TASK_COL_PAYLOAD,			TASK_COL_PRIORITY,
		TASK_COL_RUN_ID, TASK_COL_LEASE_EXPIRES_AT, TASK_COL_RUN_AT,
	};
	TupleDesc	desc = RelationGetDescr(dw->rel);
	AttrNumber *att = schedq_direct_att;
	bool		isnull;
	bool		timeout_null;
	Datum timeout = slot_getattr(slot, att[TASK_COL_TIMEOUT], &timeout_null);
	Datum now = TimestampTzGetDatum(r->now);
	Datum by_lease = DirectFunctionCall2(timestamptz_pl_interval, now,
										 IntervalPGetDatum(r->lease));
	Datum deadline = timeout_null ? (Datum) 0 :
									DirectFunctionCall2(timestamptz_pl_interval,
														now, timeout);
	int32 attempts =
		DatumGetInt32(slot_getattr(slot, att[TASK_COL_ATTEMPTS], &isnull));
	Datum values[lengthof(cols)];
	bool  nulls[lengthof(cols)] = { false };
	bool  should_free;
	HeapTuple new;

	/* attempts + 1, an int4: as the statement's + raises 22003 */
	if (attempts == PG_INT32_MAX)
		ereport(ERROR, errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				errmsg("integer out of range"));
	values[0] = CStringGetTextDatum("running");
	values[1] = Int32GetDatum(attempts + 1);
	values[2] = r->worker;
	values[3] = IntervalPGetDatum(r->lease);
	/* least(now + lease, now + timeout) */
	values[4] = !timeout_null && DatumGetTimestampTz(deadline) <
									 DatumGetTimestampTz(by_lease) ?
					deadline :
					by_lease;
	values[5] = now;
	values[6] = deadline;
	nulls[6] = timeout_null;
	values[7] = Int64GetDatum(r->nonce);

	new =
		schedq_direct_update(dw,
							 ExecFetchSlotHeapTuple(slot, false, &should_free),
							 lengthof(cols), cols, values, nulls);
	for (int i = 0; i < CLAIMED_COLUMNS; i++)
		out->v[i] = heap_getattr(new, att[returned[i]], desc, &out->isnull[i]);
	out->tid = new->t_self;
}

/*
 * The claim statement's twin: claim up to r->n tasks without the
 * executor, scanning the claim index from the claim floor on and locking
 * with SKIP LOCKED as FOR UPDATE SKIP LOCKED does; the claimed tasks go
 * to rows[0..].  Returns how many, or -1 when the statement must do it.
 */
static int
claim_direct(const SchedqClaimRequest *r, SchedqClaimed *rows)
{
	SchedqDirectWrite	dw;
	SchedqDirectDecline why;
	SchedqClaimIndex which = r->filter == CLAIM_ONE_QUEUE ? CLAIM_INDEX_QUEUE :
							 r->filter == CLAIM_SQL_TASKS ? CLAIM_INDEX_SQL :
															CLAIM_INDEX_ALL;
	Oid				 indexoid;
	Relation		 irel;
	IndexScanDesc	 scan;
	ScanKeyData		 keys[2];
	ScanKeyData		 floor[3];
	int				 nkeys = 0;
	int				 taken = 0;
	TupleTableSlot	*lockslot;
	ClaimArrays		 a;
	bool			 xact_snapshot = IsolationUsesXactSnapshot();

	if (!schedq_direct_begin(&dw, CMD_UPDATE, &why))
		return -1;
	indexoid = schedq_direct_claim_index(which);
	if (!OidIsValid(indexoid))
	{
		schedq_direct_end(&dw);
		schedq_direct_declined(DIRECT_DECLINE_INDEX);
		return -1;
	}
	claim_arrays(r, &a);
	irel = index_open(indexoid, AccessShareLock);
	if (r->filter == CLAIM_ONE_QUEUE)
		ScanKeyEntryInitialize(&keys[nkeys++], 0, 1, BTEqualStrategyNumber,
							   TEXTOID, irel->rd_indcollation[0], F_TEXTEQ,
							   a.queue);
	/* (-(priority::bigint), run_at, id) >= the floor */
	ScanKeyEntryInitialize(&floor[0], SK_ROW_MEMBER, nkeys + 1,
						   BTGreaterEqualStrategyNumber, INT8OID, InvalidOid,
						   F_BTINT8CMP, Int64GetDatum(r->floor.prio));
	ScanKeyEntryInitialize(&floor[1], SK_ROW_MEMBER, nkeys + 2,
						   BTGreaterEqualStrategyNumber, TIMESTAMPTZOID,
						   InvalidOid, F_TIMESTAMP_CMP,
						   TimestampTzGetDatum(r->floor.run_at));
	ScanKeyEntryInitialize(&floor[2], SK_ROW_MEMBER | SK_ROW_END, nkeys + 3,
						   BTGreaterEqualStrategyNumber, INT8OID, InvalidOid,
						   F_BTINT8CMP, Int64GetDatum(r->floor.id));
	/* a row header has no function: as ExecIndexBuildScanKeys builds one */
	MemSet(&keys[nkeys], 0, sizeof(ScanKeyData));
	keys[nkeys].sk_flags = SK_ROW_HEADER;
	keys[nkeys].sk_attno = floor[0].sk_attno;
	keys[nkeys].sk_strategy = BTGreaterEqualStrategyNumber;
	keys[nkeys].sk_argument = PointerGetDatum(floor);
	nkeys++;

	lockslot = table_slot_create(dw.rel, NULL);
	scan = schedq_index_beginscan(dw.rel, irel, dw.snapshot, nkeys, 0);
	index_rescan(scan, keys, nkeys, NULL, 0);
	while (taken < r->n &&
		   index_getnext_slot(scan, ForwardScanDirection, dw.slot))
	{
		ItemPointerData tid = dw.slot->tts_tid;
		TM_FailureData	tmfd;
		TM_Result		res;

		CHECK_FOR_INTERRUPTS();
		if (!claim_rule_holds_tuple(&dw, r, &a, dw.slot))
			continue;
		res =
			table_tuple_lock(dw.rel, &tid, dw.snapshot, lockslot,
							 GetCurrentCommandId(false), LockTupleExclusive,
							 LockWaitSkip,
							 xact_snapshot ? 0 :
											 TUPLE_LOCK_FLAG_FIND_LAST_VERSION,
							 &tmfd);
		switch (res)
		{
			case TM_Ok:
				/* a newer version: the rule is checked again on it */
				if (tmfd.traversed &&
					!claim_rule_holds_tuple(&dw, r, &a, lockslot))
					continue;
				claim_take(&dw, r, lockslot, &rows[taken++]);
				break;
			case TM_WouldBlock:	  /* SKIP LOCKED */
			case TM_SelfModified: /* taken by this command already */
				break;
			case TM_Updated:
			case TM_Deleted:
				if (xact_snapshot)
					ereport(ERROR, errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
							errmsg("could not serialize access due to "
								   "concurrent update"));
				break;
			default:
				elog(ERROR, "unexpected table_tuple_lock status: %u", res);
		}
	}
	index_endscan(scan);
	index_close(irel, NoLock);
	ExecDropSingleTupleTableSlot(lockslot);
	schedq_direct_end(&dw);
	return taken;
}

/*
 * Claim up to r->n tasks (see the header); the claimed tasks go to
 * rows[0..], which has room for r->n.  Returns how many.
 */
int
schedq_task_claim(const SchedqClaimRequest *r, SchedqClaimed *rows)
{
	Datum		   values[CLAIM_NPARAMS];
	char		   nulls[CLAIM_NPARAMS];
	SPITupleTable *candidates;
	Datum		  *ids;
	int			   found;
	int			   taken = 0;

	/*
	 * On a shard (an SQL executor's claim on a Citus node,
	 * process/sqlexec.c), the two statements below: the paused flags are
	 * a reference table's, which Citus changes in a prepared transaction
	 * that moves no generation (shared/commit.h), so they are always read;
	 * and Citus plans no data-modifying CTE that reads a reference table.
	 */
	bool on_shard = schedq_plan_shard() != 0;

	if (!on_shard && !schedq_budgets_any(false) &&
		!schedq_queues_any_paused() && (taken = claim_direct(r, rows)) >= 0)
		return taken;

	claim_params(r, values, nulls);
	if (!on_shard && !schedq_budgets_any(false))
	{
		int paused = schedq_queues_any_paused() ? 1 : 0;

		taken = schedq_plan_run(&claim_statement[paused][r->filter], values,
								nulls, 0, SPI_OK_UPDATE_RETURNING);
		schedq_task_claim_rows_from_spi(taken, rows);
		return taken;
	}

	found = schedq_plan_run(&claim_candidates[r->filter], values, nulls, 0,
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
			!schedq_budgets_admit(budgets,
								  SPI_getbinval(candidates->vals[i],
												candidates->tupdesc, 3,
												&isnull),
								  on_shard))
		{
			/*
			 * Another claim used the room between our look and our lock
			 * (on a shard, counted by the admission).
			 */
			if (!on_shard)
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
	if (schedq_plan_run(&claim_take_admitted, values, nulls, 0,
						SPI_OK_UPDATE_RETURNING) != taken)
		elog(ERROR, "claimed %d tasks but could not take them all", taken);
	schedq_task_claim_rows_from_spi(taken, rows);
	return taken;
}

/*
 * One look of a waiting claim: is there a task it could claim now?
 * Locks what it finds FOR KEY SHARE (the caller's transaction ends at
 * once), so that a task a claim in progress holds is not reported.
 */
bool
schedq_task_claim_look(const SchedqClaimRequest *r)
{
	Datum values[CLAIM_NPARAMS];
	char  nulls[CLAIM_NPARAMS];

	claim_params(r, values, nulls);
	return schedq_plan_run(&claim_look[claim_checks_budgets()][r->filter],
						   values, nulls, 1, SPI_OK_SELECT) > 0;
}

/*
 * Is the task a wake-up named still there for some claim (see
 * claim_still_there)?
 */
bool
schedq_task_claim_still_there(const SchedqWakeTask *wake)
{
	Datum values[4];

	values[0] = Int64GetDatum(-(int64) wake->priority);
	values[1] = TimestampTzGetDatum(wake->run_at);
	values[2] = Int64GetDatum(wake->id);
	values[3] = Int32GetDatum((int32) wake->queue);
	return schedq_plan_run(&claim_still_there[claim_checks_budgets()], values,
						   NULL, 1, SPI_OK_SELECT) > 0;
}

/*
 * How many SQL tasks the built-in executors could claim now, counting up
 * to `limit` (the scheduler's question: start an executor?).  In the
 * scheduler's transaction.
 */
int
schedq_task_claim_sql_ready(int limit)
{
	Datum values[2] = { Int32GetDatum(limit), schedq_sqlslots_busy_tasks() };
	bool  isnull;

	if (limit <= 0)
		return 0;
	schedq_plan_run(&claim_sql_ready[claim_checks_budgets()], values, NULL, 1,
					SPI_OK_SELECT);
	return (int) DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											 SPI_tuptable->tupdesc, 1,
											 &isnull));
}
