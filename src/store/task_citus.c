/*-------------------------------------------------------------------------
 * store/task_citus.c
 *	  The claim and complete on a schedq.task that Citus distributes by
 *	  queue (schedq.distribute, docs/scale-out.md).
 *
 * The table there is an empty shell: its rows are in shards that only
 * Citus's planner finds, so the direct writes decline (store/direct.c)
 * and every claim goes through statements Citus can route to the one
 * shard of its queue: the queue is a plain parameter compared with the
 * distribution column (the paused flag, the locked candidates, then one
 * UPDATE per task by queue and id).  Citus makes no distributed plan of
 * the single-server claim (its queue is an element of an array; one
 * statement over every queue is a multi-shard FOR UPDATE), so what it
 * cannot route is refused here, with a reason:
 *	- a claim over several queues or every queue;
 *	- a claim by a role that is not an admin (BYPASSRLS): owners are role
 *	  OIDs, which differ from node to node, so the owner test and work
 *	  grants cannot be evaluated on the shard's node.
 * A task with budgets is admitted as on one server, in statements Citus
 * plans (store/budgets.c): its charge is a change of a reference table.
 * One whose budget has no room is passed over, and the tasks behind it
 * read again (schedq_task_citus_claim).
 * The claim floor is a single server's (a submit on another node does
 * not lower it): this claim starts at the beginning of its queue.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "base/check.h"
#include "shared/metrics.h"
#include "shared/plan.h"
#include "store/budgets.h"
#include "store/task.h"
#include "store/task_citus.h"
#include "store/task_claim.h"

/*
 * Each statement reads one table and names the queue once, as Citus's
 * fast path router wants: it makes a generic plan of those only.
 * Is the queue paused?  $1 queue (a reference table: read here).
 */
static SchedqQuery citus_paused =
	SCHEDQ_QUERY("SELECT FROM schedq.queue q WHERE q.name = $1 AND q.paused",
				 TEXTOID);

/*
 * $1 queue, $2 n, $3 caps; then for the UPDATE $2 the id, $4 worker,
 * $5 lease, $6 the clock, $7 the nonce, $8 and $9 the task's lease
 * expiry and deadline.
 */
#define CITUS_CANDIDATES(query, budget_filter)                                 \
	query(                                                                     \
		"SELECT t.id, t.timeout, t.budgets, t.cost FROM schedq.task t"         \
		" WHERE t.queue = $1 AND t.status = 'available'"                       \
		" AND (t.required_caps = '{}' OR t.required_caps <@ $3)" budget_filter \
		" ORDER BY -(t.priority::bigint), t.run_at, t.id"                      \
		" LIMIT $2 FOR UPDATE OF t SKIP LOCKED",                               \
		TEXTOID, INT4OID, TEXTARRAYOID)

/*
 * Which tasks a statement of this file reads, by budgets (CitusBudgets):
 * none exists, so only the tasks that name none; or only the tasks whose
 * budgets all exist with room, a read of the reference table
 * schedq.budget that Citus plans only with the values; or every task,
 * each with budgets then admitted (the first read of a claim).
 */
typedef enum CitusBudgets
{
	CITUS_UNBUDGETED,
	CITUS_WITH_ROOM,
	CITUS_ANY_BUDGETS
} CitusBudgets;

#define CITUS_UNBUDGETED_SQL " AND t.budgets = '{}'"

static SchedqQuery citus_candidates[3] = {
	[CITUS_UNBUDGETED] = CITUS_CANDIDATES(SCHEDQ_QUERY, CITUS_UNBUDGETED_SQL),
	[CITUS_WITH_ROOM] =
		CITUS_CANDIDATES(SCHEDQ_QUERY_CUSTOM, TASK_BUDGET_ROOM_SQL),
	[CITUS_ANY_BUDGETS] = CITUS_CANDIDATES(SCHEDQ_QUERY, ""),
};

/* What a look reads: CITUS_UNBUDGETED or CITUS_WITH_ROOM. */
static CitusBudgets
citus_look_budgets(void)
{
	return schedq_budgets_any(true) ? CITUS_WITH_ROOM : CITUS_UNBUDGETED;
}

/*
 * Take one candidate: $2 its id, $8 and $9 its lease expiry and deadline,
 * computed here.  One UPDATE per task, each value a plain parameter:
 * Citus's generic plan of an UPDATE that sets a column from a parameter
 * and a column together (now + the task's timeout) fails its own
 * assertion (CheckAndBuildDelayedFastPathPlan, Citus 14.0.1).
 */
static SchedqQuery citus_take = SCHEDQ_QUERY(
	"UPDATE schedq.task t"
	" SET status = 'running', attempts = t.attempts + 1, claimed_by = $4,"
	"     lease = $5, started_at = $6, claim_nonce = $7,"
	"     lease_expires_at = $8, deadline = $9"
	" WHERE t.queue = $1 AND t.id = $2 AND t.status = 'available'"
	" RETURNING t.id, t.attempts, t.queue, t.kind, t.payload, t.priority,"
	" t.run_id, t.lease_expires_at, t.run_at, t.ctid",
	TEXTOID, INT8OID, TEXTARRAYOID, TEXTOID, INTERVALOID, TIMESTAMPTZOID,
	INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID);

/* now + i, as timestamptz + interval computes it */
static TimestampTz
citus_plus(TimestampTz now, Datum i)
{
	return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
												   TimestampTzGetDatum(now),
												   i));
}

/*
 * The queues of the attempts this backend claimed last, so that its
 * complete, the common case, goes to the one shard without reading every
 * shard first.  Only a hint: the UPDATE checks id, attempt, nonce and
 * status.  Direct-mapped by task id.
 */
#define CITUS_CLAIMED 256

typedef struct CitusClaimed
{
	int64 task_id;
	int32 attempt;
	int64 nonce;
	char  queue[SCHEDQ_MAX_NAME_BYTES + 1];
} CitusClaimed;

static CitusClaimed citus_claimed[CITUS_CLAIMED];

static CitusClaimed *
citus_claimed_slot(int64 task_id)
{
	return &citus_claimed[(uint64) task_id % CITUS_CLAIMED];
}

/* Remember where a claimed task is (rows: CLAIM_RETURNING's columns). */
static void
citus_remember(const SchedqClaimed *row, int64 nonce)
{
	CitusClaimed *slot = citus_claimed_slot(DatumGetInt64(row->v[CLAIMED_ID]));
	text		 *queue = DatumGetTextPP(row->v[CLAIMED_QUEUE]);
	int			  len = VARSIZE_ANY_EXHDR(queue);

	slot->task_id = 0;
	if (len > SCHEDQ_MAX_NAME_BYTES)
		return;
	memcpy(slot->queue, VARDATA_ANY(queue), len);
	slot->queue[len] = '\0';
	slot->attempt = DatumGetInt32(row->v[CLAIMED_ATTEMPT]);
	slot->nonce = nonce;
	slot->task_id = DatumGetInt64(row->v[CLAIMED_ID]);
}

/*
 * Refuse (0A000) a claim, or a waiting look, that Citus cannot route or
 * a node cannot evaluate (the header); returns the queue.
 */
static Datum
citus_claim_queue(const SchedqClaimRequest *r)
{
	bool isnull;

	if (r->filter != CLAIM_ONE_QUEUE)
		ereport(ERROR, errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("on a distributed schedq, a claim takes from one queue"),
				errhint("Pass queues => ARRAY['name']; to serve several "
						"queues, claim from each in turn."));
	if (!r->admin)
		ereport(ERROR, errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("on a distributed schedq, only an admin (a role "
					   "with BYPASSRLS) may claim"),
				errdetail("A task's owner is a role OID, which differs from "
						  "node to node."));
	return array_get_element(PointerGetDatum(r->queues), 1, (int[]){ 1 }, -1,
							 -1, false, TYPALIGN_INT, &isnull);
}

/*
 * Take what the candidates statement found (the last SPI result) into
 * rows[*taken..], admitting each task that names budgets -- whether or not
 * this node's copy showed any budget: a budget another node has committed
 * and this one not yet is then missing here, and the task is refused, not
 * taken uncharged.  values and nulls hold $1 to $7 of citus_take.
 * Returns whether a task was passed over for want of room.
 */
static bool
citus_take_found(Datum *values, char *nulls, const SchedqClaimRequest *r,
				 SchedqClaimed *rows, int *taken)
{
	SPITupleTable *cand = SPI_tuptable;
	int			   found = (int) SPI_processed;
	bool		   passed = false;

	for (int i = 0; i < found; i++)
	{
		bool  isnull;
		bool  no_timeout;
		Datum timeout =
			SPI_getbinval(cand->vals[i], cand->tupdesc, 2, &no_timeout);
		ArrayType *task_budgets = DatumGetArrayTypeP(
			SPI_getbinval(cand->vals[i], cand->tupdesc, 3, &isnull));
		TimestampTz end = citus_plus(r->now, PointerGetDatum(r->lease));

		if (ARR_NDIM(task_budgets) > 0 &&
			!schedq_budgets_admit(PointerGetDatum(task_budgets),
								  SPI_getbinval(cand->vals[i], cand->tupdesc, 4,
												&isnull),
								  true))
		{
			passed = true;
			continue;
		}
		values[1] = SPI_getbinval(cand->vals[i], cand->tupdesc, 1, &isnull);
		values[8] = (Datum) 0;
		nulls[8] = no_timeout ? 'n' : ' ';
		if (!no_timeout)
		{
			TimestampTz deadline = citus_plus(r->now, timeout);

			values[8] = TimestampTzGetDatum(deadline);
			end = Min(end, deadline);
		}
		values[7] = TimestampTzGetDatum(end);
		if (schedq_plan_run(&citus_take, values, nulls, 0,
							SPI_OK_UPDATE_RETURNING) != 1)
			elog(ERROR, "claimed task " INT64_FORMAT " but could not take it",
				 DatumGetInt64(values[1]));
		schedq_task_claim_rows_from_spi(1, &rows[*taken]);
		citus_remember(&rows[(*taken)++], r->nonce);
	}
	return passed;
}

/*
 * Claim up to r->n tasks of r's one queue from a distributed schedq.task;
 * refuses (0A000) what Citus cannot route.  Returns how many.
 *
 * While no budget exists, the candidates are the tasks that name none (a
 * task naming a budget is never taken uncharged: the budget may exist on
 * another node and not yet here).  Otherwise they are first read whatever
 * their budgets (the kept plan) and each task with budgets admitted; only
 * when one was passed over for want of room are they read again, this
 * time only those whose budgets have room (planned with the values: the
 * slower read), so that such a task holds back none behind it.
 */
static int
citus_claim(const SchedqClaimRequest *r, SchedqClaimed *rows, bool budgets)
{
	Datum values[9];
	char  nulls[9] = { ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ' };
	int	  taken = 0;

	values[0] = citus_claim_queue(r);
	if (schedq_plan_run(&citus_paused, values, nulls, 1, SPI_OK_SELECT) > 0)
		return 0;
	values[2] = PointerGetDatum(r->caps);
	values[3] = r->worker;
	nulls[3] = r->worker == (Datum) 0 ? 'n' : ' ';
	values[4] = PointerGetDatum(r->lease);
	values[5] = TimestampTzGetDatum(r->now);
	values[6] = Int64GetDatum(r->nonce);
	values[1] = Int32GetDatum(r->n);
	if (schedq_plan_run(&citus_candidates[budgets ? CITUS_ANY_BUDGETS :
													CITUS_UNBUDGETED],
						values, nulls, 0, SPI_OK_SELECT) > 0 &&
		citus_take_found(values, nulls, r, rows, &taken) && taken < r->n)
	{
		values[1] = Int32GetDatum(r->n - taken);
		if (schedq_plan_run(&citus_candidates[CITUS_WITH_ROOM], values, nulls,
							0, SPI_OK_SELECT) > 0)
			(void) citus_take_found(values, nulls, r, rows, &taken);
	}
	return taken;
}

/*
 * The claim above.  While budgets exist, in a subtransaction that is
 * rolled back when it took nothing: the rows it locked and passed over,
 * and a refused admission's locks (on every node's copy of a budget, and
 * Citus's lock of the whole table), would otherwise stay held while a
 * waiting claim (api/claim.c) sleeps in the same transaction, holding back
 * every other budgeted claim and set_budget of the cluster.
 */
int
schedq_task_citus_claim(const SchedqClaimRequest *r, SchedqClaimed *rows)
{
	MemoryContext context = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	bool		  budgets = schedq_budgets_any(true);
	int			  taken;

	if (!budgets)
		return citus_claim(r, rows, false);
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(context);
	taken = citus_claim(r, rows, true);
	if (taken > 0)
		ReleaseCurrentSubTransaction();
	else
		RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(context);
	CurrentResourceOwner = owner;
	return taken;
}

/*
 * A waiting look (api/await.c) on a distributed schedq.task: is there a
 * task of r's one queue that this claim could take?  What it finds is
 * locked FOR KEY SHARE, as schedq_task_claim_look does, and refused as a
 * claim would be.  $1 queue, $2 caps.
 */
#define CITUS_LOOK(query, budget_filter)                                       \
	query(                                                                     \
		"SELECT FROM schedq.task t"                                            \
		" WHERE t.queue = $1 AND t.status = 'available'"                       \
		" AND (t.required_caps = '{}' OR t.required_caps <@ $2)" budget_filter \
		" LIMIT 1 FOR KEY SHARE OF t SKIP LOCKED",                             \
		TEXTOID, TEXTARRAYOID)

static SchedqQuery citus_look[2] = {
	[CITUS_UNBUDGETED] = CITUS_LOOK(SCHEDQ_QUERY, CITUS_UNBUDGETED_SQL),
	[CITUS_WITH_ROOM] = CITUS_LOOK(SCHEDQ_QUERY_CUSTOM, TASK_BUDGET_ROOM_SQL),
};

bool
schedq_task_citus_look(const SchedqClaimRequest *r)
{
	Datum values[2];

	values[0] = citus_claim_queue(r);
	if (schedq_plan_run(&citus_paused, values, NULL, 1, SPI_OK_SELECT) > 0)
		return false;
	values[1] = PointerGetDatum(r->caps);
	return schedq_plan_run(&citus_look[citus_look_budgets()], values, NULL, 1,
						   SPI_OK_SELECT) > 0;
}

/*
 * A wake-up a waiting look of r's one queue could not use: is its task
 * still there for some claim?  As schedq_task_claim_still_there asks it,
 * but by the queue's name, which Citus routes to the queue's shard.
 * $1 queue, $2 minus the priority, $3 run_at, $4 id.
 */
#define CITUS_STILL_THERE(query, budget_filter)                                \
	query("SELECT FROM schedq.task t"                                          \
		  " WHERE t.queue = $1 AND t.status = 'available'"                     \
		  " AND -(t.priority::bigint) = $2 AND t.run_at = $3"                  \
		  " AND t.id >= $4" budget_filter " LIMIT 1",                          \
		  TEXTOID, INT8OID, TIMESTAMPTZOID, INT8OID)

static SchedqQuery citus_still_there[2] = {
	[CITUS_UNBUDGETED] = CITUS_STILL_THERE(SCHEDQ_QUERY, CITUS_UNBUDGETED_SQL),
	[CITUS_WITH_ROOM] =
		CITUS_STILL_THERE(SCHEDQ_QUERY_CUSTOM, TASK_BUDGET_ROOM_SQL),
};

bool
schedq_task_citus_still_there(const SchedqWakeTask	   *wake,
							  const SchedqClaimRequest *r)
{
	Datum values[4];
	text *queue;

	values[0] = citus_claim_queue(r);
	queue = DatumGetTextPP(values[0]);
	/* a task of another queue whose name has the same hash: pass it on */
	if (DatumGetUInt32(hash_any((const unsigned char *) VARDATA_ANY(queue),
								VARSIZE_ANY_EXHDR(queue))) != wake->queue)
		return true;
	if (schedq_plan_run(&citus_paused, values, NULL, 1, SPI_OK_SELECT) > 0)
		return false;
	values[1] = Int64GetDatum(-(int64) wake->priority);
	values[2] = TimestampTzGetDatum(wake->run_at);
	values[3] = Int64GetDatum(wake->id);
	return schedq_plan_run(&citus_still_there[citus_look_budgets()], values,
						   NULL, 1, SPI_OK_SELECT) > 0;
}

/*
 * Complete: the token names the task, not its queue, and an UPDATE by id
 * alone goes to every shard (a multi-shard modification, which Citus
 * serializes with every other).  So the running attempt's queue is read
 * first (a read of every shard, without locks), unless this backend
 * claimed it (citus_claimed), and the UPDATE names it: one shard.  $1 id, $2 attempt, $3 nonce, $4 result, $5 queue.  The read
 * is planned each time with its values in the text: Citus makes no
 * generic plan of a SELECT over every shard.
 */
static SchedqQuery citus_complete =
	SCHEDQ_QUERY("UPDATE schedq.task" TASK_COMPLETE_SET
				 " WHERE queue = $5 AND id = $1 AND attempts = $2"
				 " AND claim_nonce = $3 AND status = 'running'",
				 INT8OID, INT4OID, INT8OID, JSONBOID, TEXTOID);

/*
 * The queue of task task_id's running attempt `attempt` with this nonce
 * on a distributed schedq.task: remembered if this backend claimed it,
 * else read from every shard (planned each time, its values in the text:
 * Citus makes no generic plan of a SELECT over every shard).  NULL when
 * that attempt is not running.
 */
char *
schedq_task_citus_queue_of(int64 task_id, int32 attempt, int64 nonce)
{
	CitusClaimed *slot = citus_claimed_slot(task_id);
	char		 *sql;

	if (slot->task_id == task_id && slot->attempt == attempt &&
		slot->nonce == nonce)
	{
		slot->task_id = 0;
		return pstrdup(slot->queue);
	}
	sql = psprintf("SELECT queue FROM schedq.task WHERE id = " INT64_FORMAT
				   " AND attempts = %d AND claim_nonce = " INT64_FORMAT
				   " AND status = 'running'",
				   task_id, attempt, nonce);
	if (SPI_execute(sql, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the queue of task " INT64_FORMAT, task_id);
	if (SPI_processed == 0)
		return NULL;
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

/*
 * The queue of task task_id whatever its status, read from every shard
 * (as above); NULL when there is no such task.
 */
char *
schedq_task_citus_queue_of_task(int64 task_id)
{
	char *sql =
		psprintf("SELECT queue FROM schedq.task WHERE id = " INT64_FORMAT,
				 task_id);

	if (SPI_execute(sql, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the queue of task " INT64_FORMAT, task_id);
	if (SPI_processed == 0)
		return NULL;
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

/*
 * Complete attempt `attempt` (fenced by nonce) of a task of a distributed
 * schedq.task.  True when it was running and is now done.
 */
bool
schedq_task_citus_complete(int64 task_id, int32 attempt, int64 nonce,
						   Datum result, bool result_null)
{
	Datum values[5] = { Int64GetDatum(task_id), Int32GetDatum(attempt),
						Int64GetDatum(nonce), result, (Datum) 0 };
	char  nulls[5] = { ' ', ' ', ' ', result_null ? 'n' : ' ', ' ' };
	char *queue = schedq_task_citus_queue_of(task_id, attempt, nonce);

	if (queue == NULL)
		return false;
	values[4] = CStringGetTextDatum(queue);
	return schedq_plan_run(&citus_complete, values, nulls, 0, SPI_OK_UPDATE) ==
		   1;
}

/*
 * Is the shard of this queue's tasks on this node?  Citus's own functions,
 * by name: a waiting claim of one queue waits on its node's wake-ups,
 * which only that node's submits and completions trigger.
 */
static SchedqQuery citus_queue_local = SCHEDQ_QUERY(
	"SELECT FROM pg_catalog.pg_dist_placement p"
	" WHERE p.shardid = pg_catalog.get_shard_id_for_distribution_column("
	"'schedq.task'::regclass, $1)"
	" AND p.groupid = (SELECT groupid FROM pg_catalog.pg_dist_local_group)",
	TEXTOID);

/*
 * Refuse (0A000) a wait of `call` (claim_queue, await_queue) for this
 * queue unless its shard is on this node, where its wake-ups are.  Inside
 * a call bracket: Citus's lookup wants SELECT on schedq.task.
 */
void
schedq_task_citus_require_local(Datum queue, const char *call)
{
	Datum values[1] = { queue };

	if (schedq_plan_run(&citus_queue_local, values, NULL, 1, SPI_OK_SELECT) ==
		0)
		ereport(ERROR, errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("on a distributed schedq, %s waits only on the node "
					   "that holds its queue's tasks",
					   call),
				errhint("Call it through the coordinator, outside a "
						"transaction block and as a statement of its own, so "
						"that Citus runs it there."));
}
