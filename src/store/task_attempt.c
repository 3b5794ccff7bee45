/*-------------------------------------------------------------------------
 * store/task_attempt.c
 *	  The statements on a running attempt: heartbeat, complete, fail (the
 *	  reaper's too), and what verify_grant and the SQL executors read.
 *
 * Every write here is guarded by (id, attempts, status = 'running') and,
 * for a worker, the claim's nonce: a token for an attempt that is no
 * longer the running one changes nothing.  fail retries with backoff
 * while attempts remain; for the reaper, a lost lease or a timeout is a
 * failed attempt.
 *
 * complete goes first to where this backend's claim left the row (the
 * claimed-row hint), then through the primary key; its direct twin
 * (attempt_complete_direct below) writes without PostgreSQL's executor where it may.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/pg_prng.h"
#include "executor/spi.h"
#include "storage/bufmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/timestamp.h"

#include "shared/metrics.h"
#include "shared/plan.h"
#include "shared/wake.h"
#include "store/direct.h"
#include "store/direct_int.h"
#include "store/task.h"
#include "store/task_attempt.h"
#include "store/task_citus.h"
#include "store/task_claim.h"

/* What attempt_complete_direct did. */
typedef enum SchedqDirectOutcome
{
	DIRECT_DONE,	 /* the attempt was running and is now done */
	DIRECT_STALE,	 /* the attempt is not the running one: nothing changed */
	DIRECT_DECLINED, /* not for this path: run the UPDATE statement */
} SchedqDirectOutcome;

/* Backoff of fail(): 1 s after the first attempt, doubling, capped. */
#define BACKOFF_BASE_USECS USECS_PER_SEC
#define BACKOFF_MAX_USECS  (3600 * USECS_PER_SEC)

/* The running attempt a token names: $1 id, $2 attempt, $3 nonce. */
#define ATTEMPT_IS_RUNNING                                                     \
	" id = $1 AND attempts = $2 AND claim_nonce = $3 AND status = 'running'"

static SchedqQuery q_heartbeat =
	SCHEDQ_QUERY("UPDATE schedq.task"
				 " SET lease_expires_at = least(greatest(lease_expires_at,"
				 "     now() + COALESCE($4, lease)), deadline)"
				 " WHERE" ATTEMPT_IS_RUNNING " RETURNING lease_expires_at",
				 INT8OID, INT4OID, INT8OID, INTERVALOID);
/* A heartbeat that records progress: $5 progress, $6 its note. */
static SchedqQuery q_progress =
	SCHEDQ_QUERY("UPDATE schedq.task"
				 " SET lease_expires_at = least(greatest(lease_expires_at,"
				 "     now() + COALESCE($4, lease)), deadline),"
				 "     progress = $5, progress_note = $6,"
				 " progress_at = clock_timestamp()"
				 " WHERE" ATTEMPT_IS_RUNNING " RETURNING lease_expires_at",
				 INT8OID, INT4OID, INT8OID, INTERVALOID, FLOAT4OID, TEXTOID);
static SchedqQuery q_complete =
	SCHEDQ_QUERY("UPDATE schedq.task" TASK_COMPLETE_SET
				 " WHERE" ATTEMPT_IS_RUNNING,
				 INT8OID, INT4OID, INT8OID, JSONBOID);
static SchedqQuery q_complete_tid =
	SCHEDQ_QUERY("UPDATE schedq.task" TASK_COMPLETE_SET
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
/*
 * fail's statements on a schedq.task that Citus distributes: each names
 * the queue ($4 or $5, a plain parameter), so that Citus routes it to one
 * shard, and the retry's run_at is computed here ($3): Citus 14.0.1's
 * generic plan of a one-shard UPDATE that computes a value from a
 * parameter fails its own assertion (store/task_citus.c).
 */
static SchedqQuery q_fail_lock_citus =
	SCHEDQ_QUERY("SELECT attempts - retry_base >= max_attempts,"
				 "       attempts - retry_base," TASK_UNGATED_SQL ","
				 "       queue, required_caps"
				 " FROM schedq.task"
				 " WHERE queue = $4 AND id = $1 AND attempts = $2"
				 "   AND status = 'running' AND claim_nonce = $3"
				 " FOR UPDATE",
				 INT8OID, INT4OID, INT8OID, TEXTOID);
static SchedqQuery q_fail_final_citus =
	SCHEDQ_QUERY("UPDATE schedq.task"
				 " SET status = 'failed', last_error = $2,"
				 "     finished_at =" TASK_FINISHED_NOW_SQL
				 " WHERE queue = $3 AND id = $1",
				 INT8OID, TEXTOID, TEXTOID);
static SchedqQuery q_fail_retry_citus =
	SCHEDQ_QUERY("UPDATE schedq.task"
				 " SET status = $4, last_error = $2, run_at = $3,"
				 "     claimed_by = NULL, lease_expires_at = NULL,"
				 "     deadline = NULL"
				 " WHERE queue = $5 AND id = $1",
				 INT8OID, TEXTOID, TIMESTAMPTZOID, TEXTOID, TEXTOID);
static SchedqQuery q_fail_final =
	SCHEDQ_QUERY("UPDATE schedq.task"
				 " SET status = 'failed', last_error = $2,"
				 "     finished_at =" TASK_FINISHED_NOW_SQL " WHERE id = $1",
				 INT8OID, TEXTOID);
static SchedqQuery q_fail_retry =
	SCHEDQ_QUERY("UPDATE schedq.task"
				 " SET status = $4, last_error = $2,"
				 "     run_at = now() + make_interval(secs => $3 / 1e6),"
				 "     claimed_by = NULL, lease_expires_at = NULL,"
				 "     deadline = NULL"
				 " WHERE id = $1",
				 INT8OID, TEXTOID, INT8OID, TEXTOID);
static SchedqQuery q_state =
	SCHEDQ_QUERY("SELECT lease_expires_at < now()"
				 " FROM schedq.task WHERE" ATTEMPT_IS_RUNNING,
				 INT8OID, INT4OID, INT8OID);
static SchedqQuery q_owner =
	SCHEDQ_QUERY("SELECT owner::oid, deadline FROM schedq.task WHERE id = $1",
				 INT8OID);

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
attempt_claimed_slot(int64 task_id)
{
	return &claimed_rows[(uint64) task_id % CLAIMED_ROWS];
}

/*
 * claim took this attempt of a task; its row version is at tid.
 */
void
schedq_task_attempt_claimed_at(int64 task_id, int32 attempt, ItemPointer tid)
{
	ClaimedRow *slot = attempt_claimed_slot(task_id);

	slot->task_id = task_id;
	slot->attempt = attempt;
	ItemPointerCopy(tid, &slot->tid);
}

/*
 * Push the lease of a running attempt to now() + extend (NULL: the lease
 * the claim asked for), never shortening it and never past its deadline;
 * with progress (not NULL), also record it.  False when the attempt is
 * not the running one; else *expires is the new expiry.
 */
bool
schedq_task_attempt_heartbeat(int64 task_id, int32 attempt, int64 nonce,
							  const Interval	   *extend,
							  const SchedqProgress *progress,
							  TimestampTz		   *expires)
{
	Datum values[6] = { Int64GetDatum(task_id), Int32GetDatum(attempt),
						Int64GetDatum(nonce), PointerGetDatum(extend) };
	char  nulls[6] = { ' ', ' ', ' ', extend == NULL ? 'n' : ' ', 'n', 'n' };
	bool  isnull;

	if (progress)
	{
		values[4] = Float4GetDatum(progress->value);
		nulls[4] = progress->value_null ? 'n' : ' ';
		values[5] = PointerGetDatum(progress->note);
		nulls[5] = progress->note == NULL ? 'n' : ' ';
	}
	if (schedq_plan_run(progress ? &q_progress : &q_heartbeat, values, nulls, 0,
						SPI_OK_UPDATE_RETURNING) != 1)
		return false;
	*expires =
		DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0],
										  SPI_tuptable->tupdesc, 1, &isnull));
	return true;
}

/*
 * Is this row version task task_id's running attempt `attempt` with this
 * nonce?  ATTEMPT_IS_RUNNING, the WHERE clause of q_complete.
 */
static bool
attempt_is_running(HeapTuple tuple, TupleDesc desc, int64 task_id,
				   int32 attempt, int64 nonce)
{
	bool isnull;

	return DatumGetInt64(heap_getattr(tuple, schedq_direct_att[TASK_COL_ID],
									  desc, &isnull)) == task_id &&
		   DatumGetInt32(heap_getattr(tuple,
									  schedq_direct_att[TASK_COL_ATTEMPTS],
									  desc, &isnull)) == attempt &&
		   DatumGetInt64(heap_getattr(tuple,
									  schedq_direct_att[TASK_COL_CLAIM_NONCE],
									  desc, &isnull)) == nonce &&
		   !isnull &&
		   schedq_direct_text_equals(heap_getattr(tuple,
												  schedq_direct_att
													  [TASK_COL_STATUS],
												  desc, &isnull),
									 "running");
}

/*
 * Find the version of task task_id visible to the write's snapshot, at
 * the hinted TID or through the primary key, and put its TID into tid
 * when it is the running attempt `attempt` with this nonce.  Nothing is
 * locked: a stale completion, like the statement's WHERE clause, locks
 * no row.
 */
static bool
attempt_find(SchedqDirectWrite *dw, int64 task_id, int32 attempt, int64 nonce,
			 ItemPointer hint, ItemPointer tid)
{
	TupleDesc	desc = RelationGetDescr(dw->rel);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	bool		found = false;

	/* a TID past the end (after a VACUUM FULL, say) is no hint */
	if (hint != NULL && ItemPointerIsValid(hint) &&
		ItemPointerGetBlockNumber(hint) < RelationGetNumberOfBlocks(dw->rel))
	{
		HeapTupleData hinted;
		Buffer		  buffer;

		hinted.t_self = *hint;
		if (heap_fetch(dw->rel, dw->snapshot, &hinted, &buffer, false))
		{
			bool isnull;
			bool same_task =
				DatumGetInt64(heap_getattr(&hinted,
										   schedq_direct_att[TASK_COL_ID], desc,
										   &isnull)) == task_id;

			found = same_task &&
					attempt_is_running(&hinted, desc, task_id, attempt, nonce);
			ReleaseBuffer(buffer);
			if (same_task)
			{
				*tid = *hint;
				return found;
			}
		}
	}

	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT8EQ,
				Int64GetDatum(task_id));
	scan = systable_beginscan(dw->rel, schedq_direct_primary_key(), true,
							  dw->snapshot, 1, &key);
	if (HeapTupleIsValid(tuple = systable_getnext(scan)) &&
		attempt_is_running(tuple, desc, task_id, attempt, nonce))
	{
		*tid = tuple->t_self;
		found = true;
	}
	systable_endscan(scan);
	return found;
}

/*
 * The status trigger's gate event for a task that held lock_key or
 * concurrency_key and ended (it has no dependents: those take the
 * statement).
 */
static void
attempt_gate_event(HeapTuple old, TupleDesc desc)
{
	Datum values[3];
	char  nulls[3] = { ' ', ' ', 'n' };
	bool  isnull;

	values[0] =
		heap_getattr(old, schedq_direct_att[TASK_COL_LOCK_KEY], desc, &isnull);
	if (isnull)
		nulls[0] = 'n';
	values[1] = heap_getattr(old, schedq_direct_att[TASK_COL_CONCURRENCY_KEY],
							 desc, &isnull);
	if (isnull)
		nulls[1] = 'n';
	values[2] = (Datum) 0;
	if (nulls[0] == 'n' && nulls[1] == 'n')
		return;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	schedq_task_gate_event(values, nulls);
	SPI_finish();
}

/*
 * q_complete's twin: complete attempt `attempt` (fenced by nonce) of a
 * task as that statement would, without PostgreSQL's executor.  hint: where the
 * claim left the row, or NULL.  DIRECT_DECLINED when the statement must
 * do it (the row is then locked by this transaction, which the statement
 * does not mind).
 */
static SchedqDirectOutcome
attempt_complete_direct(int64 task_id, int32 attempt, int64 nonce, Datum result,
						bool result_null, ItemPointer hint)
{
	static const SchedqTaskColumn cols[] = { TASK_COL_STATUS, TASK_COL_RESULT,
											 TASK_COL_FINISHED_AT };
	SchedqDirectWrite			  dw;
	SchedqDirectDecline			  why;
	ItemPointerData				  tid;
	TM_FailureData				  tmfd;
	TupleDesc					  desc;
	HeapTuple					  old;
	bool						  should_free;
	bool						  isnull;
	SchedqDirectOutcome			  outcome = DIRECT_DONE;

	if (!schedq_direct_begin(&dw, CMD_UPDATE, &why))
		return DIRECT_DECLINED;
	desc = RelationGetDescr(dw.rel);
	if (!attempt_find(&dw, task_id, attempt, nonce, hint, &tid))
	{
		schedq_direct_end(&dw);
		return DIRECT_STALE;
	}
	/* as UPDATE in READ COMMITTED: lock the latest version, check again */
	if (table_tuple_lock(dw.rel, &tid, dw.snapshot, dw.slot,
						 GetCurrentCommandId(false), LockTupleNoKeyExclusive,
						 LockWaitBlock,
						 IsolationUsesXactSnapshot() ?
							 0 :
							 TUPLE_LOCK_FLAG_FIND_LAST_VERSION,
						 &tmfd) != TM_Ok)
	{
		if (IsolationUsesXactSnapshot())
			ereport(ERROR, errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					errmsg("could not serialize access due to concurrent "
						   "update"));
		schedq_direct_end(&dw);
		return DIRECT_STALE;
	}
	old = ExecFetchSlotHeapTuple(dw.slot, false, &should_free);
	if (tmfd.traversed &&
		!attempt_is_running(old, desc, task_id, attempt, nonce))
	{
		schedq_direct_end(&dw);
		return DIRECT_STALE;
	}

	/*
	 * task_status_event's WHEN clause (NEW.run_id is OLD.run_id here): a
	 * task of a run or with dependents goes to the statement and its
	 * trigger; one holding keys gets the trigger's gate event from here.
	 */
	if (!heap_attisnull(old, schedq_direct_att[TASK_COL_RUN_ID], desc) ||
		DatumGetBool(heap_getattr(old,
								  schedq_direct_att[TASK_COL_HAS_DEPENDENTS],
								  desc, &isnull)))
	{
		schedq_direct_declined(DIRECT_DECLINE_STATUS_EVENT);
		outcome = DIRECT_DECLINED;
	}
	else
	{
		/* the statement's start, never before started_at */
		TimestampTz finished = GetCurrentStatementStartTimestamp();
		Datum		started =
			heap_getattr(old, schedq_direct_att[TASK_COL_STARTED_AT], desc,
						 &isnull);
		Datum values[3];
		bool  nulls[3] = { false, result_null, false };

		if (!isnull)
			finished = Max(finished, DatumGetTimestampTz(started));
		values[0] = CStringGetTextDatum("done");
		values[1] = result;
		values[2] = TimestampTzGetDatum(finished);

		(void) schedq_direct_update(&dw, old, lengthof(cols), cols, values,
									nulls);
		attempt_gate_event(old, desc);
	}
	schedq_direct_end(&dw);
	return outcome;
}

/*
 * Complete a running attempt with this result.  Goes first to the row
 * where this session's claim left the attempt (the hint), then through
 * the primary key; without PostgreSQL's executor where store/direct.h lets it.
 * True when the attempt was running and is now done.
 */
bool
schedq_task_attempt_complete(int64 task_id, int32 attempt, int64 nonce,
							 Datum result, bool result_null)
{
	ClaimedRow	   *slot = attempt_claimed_slot(task_id);
	ItemPointerData hint;
	Datum values[5] = { Int64GetDatum(task_id), Int32GetDatum(attempt),
						Int64GetDatum(nonce), result, (Datum) 0 };
	char  nulls[5] = { ' ', ' ', ' ', result_null ? 'n' : ' ', 'n' };

	/* Citus's shell table: the statements that name the queue */
	if (schedq_task_distributed())
		return schedq_task_citus_complete(task_id, attempt, nonce, result,
										  result_null);
	ItemPointerSetInvalid(&hint);
	if (slot->task_id == task_id && slot->attempt == attempt)
	{
		hint = slot->tid;
		slot->task_id = 0;
	}
	switch (attempt_complete_direct(task_id, attempt, nonce, result,
									result_null, &hint))
	{
		case DIRECT_DONE:
			return true;
		case DIRECT_STALE:
			return false;
		case DIRECT_DECLINED:
			break;
	}
	if (ItemPointerIsValid(&hint))
	{
		values[4] = PointerGetDatum(&hint);
		nulls[4] = ' ';
		if (schedq_plan_run(&q_complete_tid, values, nulls, 0, SPI_OK_UPDATE) ==
			1)
			return true;
	}
	return schedq_plan_run(&q_complete, values, nulls, 0, SPI_OK_UPDATE) == 1;
}

/*
 * How long to wait before attempt number `used` + 1: 1 s after the first
 * attempt, doubling, capped at an hour, with +-25 % jitter.
 */
static int64
attempt_backoff_usecs(int32 used)
{
	int64 delay = BACKOFF_MAX_USECS;

	if (used >= 1 && used <= 13)
		delay = Min(BACKOFF_BASE_USECS << (used - 1), BACKOFF_MAX_USECS);
	return (int64) (delay *
					(0.75 + 0.5 * pg_prng_double(&pg_global_prng_state)));
}

/* usecs microseconds as an interval (make_interval(secs => usecs / 1e6)) */
static Interval *
attempt_usecs_interval(int64 usecs)
{
	Interval *i = palloc0(sizeof(Interval));

	i->time = usecs;
	return i;
}

/*
 * Fail attempt `attempt` of a task (nonce: the claim's, or NULL for any):
 * retry it after retry_us (or the backoff, when retry_us is negative)
 * while attempts remain and the failure is not permanent, else fail it for
 * good.  Returns what it did (FAIL_STALE when that attempt is no longer
 * the running one).  Shared by fail() and the reaper.
 */
SchedqFailOutcome
schedq_task_attempt_fail(int64 task_id, int32 attempt, const int64 *nonce,
						 const char *error, int64 retry_us, bool permanent)
{
	Datum	  values[5];
	char	  nulls[4] = { ' ', ' ', nonce ? ' ' : 'n', ' ' };
	char	 *queue = NULL;
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
	/* Citus's shell table: the statements that name the queue */
	if (nonce != NULL && schedq_task_distributed())
	{
		queue = schedq_task_citus_queue_of(task_id, attempt, *nonce);
		if (queue == NULL)
			return FAIL_STALE;
		values[3] = CStringGetTextDatum(queue);
	}
	if (schedq_plan_run(queue ? &q_fail_lock_citus : &q_fail_lock, values,
						nulls, 0, SPI_OK_SELECT) == 0)
		return FAIL_STALE;

	tuple = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	exhausted = DatumGetBool(SPI_getbinval(tuple, desc, 1, &isnull));
	used = DatumGetInt32(SPI_getbinval(tuple, desc, 2, &isnull));
	ungated = DatumGetBool(SPI_getbinval(tuple, desc, 3, &isnull));

	values[1] = CStringGetTextDatum(error);
	if (permanent || exhausted)
	{
		values[2] = queue ? CStringGetTextDatum(queue) : (Datum) 0;
		schedq_plan_run(queue ? &q_fail_final_citus : &q_fail_final, values,
						NULL, 0, SPI_OK_UPDATE);
		schedq_metrics_count(METRIC_TASKS_FAILED, 1);
		return FAIL_FINAL;
	}

	/*
	 * Retry at once as 'available' only when nothing would gate it;
	 * otherwise the promotion loop decides.
	 */
	delay = retry_us >= 0 ? retry_us : attempt_backoff_usecs(used);
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
	if (queue)
	{
		values[2] =
			DirectFunctionCall2(timestamptz_pl_interval,
								TimestampTzGetDatum(
									GetCurrentTransactionStartTimestamp()),
								IntervalPGetDatum(
									attempt_usecs_interval(delay)));
		values[4] = CStringGetTextDatum(queue);
		schedq_plan_run(&q_fail_retry_citus, values, NULL, 0, SPI_OK_UPDATE);
	}
	else
		schedq_plan_run(&q_fail_retry, values, NULL, 0, SPI_OK_UPDATE);
	schedq_metrics_count(METRIC_TASKS_RETRIED, 1);
	return delay == 0 && ungated ? FAIL_RETRY_NOW : FAIL_RETRY;
}

/*
 * Is this attempt the running one, and is its lease still good?
 */
SchedqAttemptState
schedq_task_attempt_state(int64 task_id, int32 attempt, int64 nonce)
{
	Datum values[3] = { Int64GetDatum(task_id), Int32GetDatum(attempt),
						Int64GetDatum(nonce) };
	bool  isnull;
	bool  expired;

	if (schedq_plan_run(&q_state, values, NULL, 1, SPI_OK_SELECT) == 0)
		return ATTEMPT_STALE;
	expired = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
										 SPI_tuptable->tupdesc, 1, &isnull));
	return !isnull && expired ? ATTEMPT_EXPIRED : ATTEMPT_VALID;
}

/*
 * The owner of a task and the deadline of its attempt (0 for none), as
 * the current snapshot has them: what a SQL executor needs of the task it
 * claimed.  False when there is no such task.
 */
bool
schedq_task_attempt_owner(int64 task_id, Oid *owner, TimestampTz *deadline)
{
	Datum id = Int64GetDatum(task_id);
	bool  isnull;
	Datum value;

	if (schedq_plan_run(&q_owner, &id, NULL, 0, SPI_OK_SELECT) != 1)
		return false;
	*owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
											SPI_tuptable->tupdesc, 1, &isnull));
	value =
		SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	*deadline = isnull ? 0 : DatumGetTimestampTz(value);
	return true;
}
