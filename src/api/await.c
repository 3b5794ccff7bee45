/*-------------------------------------------------------------------------
 * api/await.c
 *	  schedq.await_task: wait for a task holding no snapshot and no lock;
 *	  and what every waiting claim does with a wake-up it cannot use.
 *
 * A worker can wait in two ways.  claim(wait => ...) waits inside its
 * statement: the statement's snapshot stays registered, so the session's
 * xmin holds back VACUUM of every table of the database, and it keeps
 * the locks its looks took on schedq's tables and indexes, so ALTER
 * EXTENSION, REINDEX or DROP EXTENSION queue behind it.  await_task is a
 * procedure that waits between transactions instead: CALLed outside a
 * transaction block it runs non-atomically, so it can commit.  It
 * registers as a waiter (wake.c), commits what the caller's transaction
 * held, then looks once for a task it could take, in a transaction of its
 * own that it commits at once, and sleeps on its latch holding nothing
 * but the transaction that every CALL has open (no xid, no snapshot, no
 * lock but its own virtual xid).  It returns woken = true when a look
 * found a task it could take; the worker then claims it with claim().
 *
 * A look must not take what it found (the worker claims, with its own
 * worker name and lease), yet it must not report a task that a claim in
 * progress holds: the worker would call claim(), get nothing, call
 * await_task, be told the same again, and spin for as long as that
 * claim's transaction lasts.  So the look is the claim's candidate query
 * (the same predicates as claim.c's CLAIM_CANDIDATES: keep them in step)
 * with FOR KEY SHARE SKIP LOCKED, committed at once.  A look that locked
 * a row commits without waiting for its WAL to be flushed: losing that
 * commit in a crash loses nothing but the lock.
 *
 * A wake-up names its task, and the waiters' table can only guess who
 * could take it (wake.c).  A waiter whose look found nothing passes the
 * wake-up on to the next waiter while the task is still there for some
 * claim: available (in the snapshot: a claim in progress still shows it
 * available, and the chain then ends at the first look after that claim
 * commits), its queue not paused and its budgets with room (resume_queue
 * and set_budget wake every waiter when those change).
 * schedq_await_pass_on does that, for await_task and claim(wait => ...)
 * alike.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/latch.h"
#include "utils/array.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "api/await.h"
#include "shared/call.h"
#include "lib/check.h"
#include "lib/compat.h"
#include "lib/cron.h"
#include "store/floor.h"
#include "shared/metrics.h"
#include "shared/plan.h"
#include "shared/shm.h"
#include "shared/wake.h"

/*
 * Is the task a wake-up named still there for some claim?  The wake-up
 * knows the task's queue by the hash of its name and its place in claim
 * order, whose id may be a lower bound (submit does not know it yet), so
 * this asks for an available task of that queue at that priority and
 * run_at from that id on: the task, or a sibling submitted with it, which
 * needs a taker as much.  An index probe of task_available_idx.
 * Parameters: $1 minus the priority, $2 run_at, $3 id, $4 queue hash.
 */
static SchedqQuery await_still_there = SCHEDQ_QUERY(
	"SELECT FROM schedq.task t"
	" WHERE t.status = 'available'"
	" AND -(t.priority::bigint) = $1 AND t.run_at = $2 AND t.id >= $3"
	" AND hashtext(t.queue) = $4"
	" AND NOT EXISTS (SELECT FROM schedq.queue q"
	"                 WHERE q.name = t.queue AND q.paused)"
	" AND (t.budgets = '{}' OR NOT EXISTS ("
	"   SELECT FROM schedq.budget b WHERE b.name = ANY (t.budgets)"
	"   AND CASE WHEN b.period_start + b.period <= now() THEN 0 ELSE b.used END"
	"       + t.cost > b.hard_limit))"
	" LIMIT 1",
	INT8OID, TIMESTAMPTZOID, INT8OID, INT4OID);

/*
 * After a look of a waiting claim that found nothing it could take: if
 * the waiter was woken for a task that is still there for some claim,
 * pass the wake-up on to the next waiter that could take it.  Inside the
 * call bracket.
 */
void
schedq_await_pass_on(void)
{
	const SchedqWakeTask *wake = schedq_wake_woken_for();
	Datum				  values[4];

	if (wake == NULL)
		return;
	values[0] = Int64GetDatum(-(int64) wake->priority);
	values[1] = TimestampTzGetDatum(wake->run_at);
	values[2] = Int64GetDatum(wake->id);
	values[3] = Int32GetDatum((int32) wake->queue);
	if (schedq_plan_run(&await_still_there, values, NULL, 1, SPI_OK_SELECT) > 0)
		schedq_wake_pass_on();
}

/*
 * Is there a task the caller could claim?  claim.c's candidate query for
 * one task, locking what it finds FOR KEY SHARE SKIP LOCKED so that a
 * task a claim in progress holds is not reported.
 * Parameters: $1 queues, $2 caps, $3 caller, $4 admin, $5-$7 the floor.
 */
#define AWAIT_LOOK(queue_filter)                                               \
	SCHEDQ_QUERY(                                                              \
		"SELECT FROM schedq.task t"                                            \
		" WHERE t.status = 'available'" queue_filter                           \
		" AND (t.required_caps = '{}' OR t.required_caps <@ $2)"               \
		" AND ($4 OR pg_has_role($3, t.owner::oid, 'USAGE'))"                  \
		" AND NOT EXISTS (SELECT FROM schedq.queue q"                          \
		"                 WHERE q.name = t.queue AND q.paused)"                \
		" AND (t.budgets = '{}' OR NOT EXISTS ("                               \
		"   SELECT FROM schedq.budget b WHERE b.name = ANY (t.budgets)"        \
		"   AND CASE WHEN b.period_start + b.period <= now() THEN 0"           \
		"       ELSE b.used END + t.cost > b.hard_limit))"                     \
		" AND (-(t.priority::bigint), t.run_at, t.id) >= ($5, $6, $7)"         \
		" ORDER BY -(t.priority::bigint), t.run_at, t.id"                      \
		" LIMIT 1 FOR KEY SHARE OF t SKIP LOCKED",                             \
		TEXTARRAYOID, TEXTARRAYOID, OIDOID, BOOLOID, INT8OID, TIMESTAMPTZOID,  \
		INT8OID)

/* Indexed by queue filter: every queue, one queue, some queues. */
static SchedqQuery await_look_query[3] = {
	AWAIT_LOOK(""),
	AWAIT_LOOK(" AND t.queue = ($1::text[])[1]"),
	AWAIT_LOOK(" AND t.queue = ANY ($1::text[])"),
};

/* What one await_task asks for, checked. */
typedef struct AwaitArgs
{
	ArrayType *queues; /* NULL: every queue */
	ArrayType *caps;
	int		   filter; /* index into await_look_query */
	int64	   wait_us;
} AwaitArgs;

/*
 * One look, in the current transaction (the caller commits it): is there
 * a task the caller could claim?  If not, a wake-up this waiter cannot
 * use goes on.
 */
static bool
await_look(AwaitArgs *args)
{
	SchedqCall	   call;
	SchedqClaimKey floor;
	Datum		   values[7];
	char		   nulls[7] = { ' ', ' ', ' ', ' ', ' ', ' ', ' ' };
	bool		   found;

	/* SET LOCAL synchronous_commit = off: see the header */
	(void) set_config_option("synchronous_commit", "off", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
	schedq_call_begin(&call);
	values[0] = PointerGetDatum(args->queues);
	nulls[0] = args->queues == NULL ? 'n' : ' ';
	values[1] = PointerGetDatum(args->caps);
	values[2] = ObjectIdGetDatum(call.caller);
	values[3] = BoolGetDatum(call.admin);
	schedq_floor_probe_if_due();
	schedq_floor_get(&floor);
	values[4] = Int64GetDatum(floor.prio);
	values[5] = TimestampTzGetDatum(floor.run_at);
	values[6] = Int64GetDatum(floor.id);
	found = schedq_plan_run(&await_look_query[args->filter], values, nulls, 1,
					   SPI_OK_SELECT) > 0;
	if (!found)
		schedq_await_pass_on();
	schedq_call_end(&call);
	return found;
}

PG_FUNCTION_INFO_V1(schedq_await_task);

/*
 * CALL schedq.await_task(queues, caps, wait, INOUT woken): wait until
 * there is a task this worker could claim (woken = true) or wait has
 * passed (false), holding no snapshot and no lock meanwhile.  Needs a
 * non-atomic context: it commits the transaction it is called in.
 */
Datum
schedq_await_task(PG_FUNCTION_ARGS)
{
	CallContext *context = (CallContext *) fcinfo->context;
	AwaitArgs	 args;
	TimestampTz	 deadline;
	bool		 found = false;
	TupleDesc	 desc;
	Datum		 out;
	bool		 outnull = false;

	memset(&args, 0, sizeof(args));
	args.filter = 0;
	if (!PG_ARGISNULL(0))
	{
		ArrayType *arr = PG_GETARG_ARRAYTYPE_P(0);
		int		   nqueues = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));

		schedq_check_names("queues", arr, SCHEDQ_MAX_QUEUES);
		args.queues = arr;
		args.filter =
			(nqueues == 1 && ARR_NDIM(arr) == 1 && ARR_LBOUND(arr)[0] == 1) ?
				1 :
				2;
	}
	if (PG_ARGISNULL(1))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("caps must not be null"),
				errhint(
					"Pass an empty array for a worker without capabilities."));
	args.caps = PG_GETARG_ARRAYTYPE_P(1);
	schedq_check_names("caps", args.caps, SCHEDQ_MAX_NAMES);
	if (PG_ARGISNULL(2))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("wait must not be null"));
	args.wait_us =
		schedq_check_interval("wait", PG_GETARG_INTERVAL_P(2), true,
							  SCHEDQ_MAX_WAIT_USECS, SCHEDQ_MAX_WAIT_TEXT);
	/* the arguments first: a bad one is the same error anywhere */
	if (context == NULL || !IsA(context, CallContext) || context->atomic)
		ereport(
			ERROR, errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
			errmsg("schedq.await_task cannot run inside a transaction block"),
			errdetail(
				"It commits the transaction it is called in, so that it holds no snapshot and no lock while it waits."),
			errhint(
				"CALL it on its own, not inside BEGIN or a function; or wait with schedq.claim(wait => ...)."));
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	schedq_shm_require_preloaded();

	/*
	 * The arguments were detoasted into the CALL's memory, which outlives
	 * the commits below; so does SPI's memory in a non-atomic connection.
	 */
	if (SPI_connect_ext(SPI_OPT_NONATOMIC) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect_ext failed");
	deadline = GetCurrentTimestamp() + args.wait_us;
	PG_TRY();
	{
		/* the caller's snapshot (the arguments') and locks go */
		SPI_commit();
		for (;;)
		{
			/* register before each look: a task committed after it wakes us */
			schedq_wake_register(args.queues, args.caps, false);
			found = await_look(&args);
			/* the look's snapshot and locks go */
			SPI_commit();
			if (found)
				break;
			if (!schedq_wake_sleep(deadline,
									 SCHEDQ_WAIT_EVENT("SchedqAwait")))
				break;
		}
	}
	PG_FINALLY();
	{
		schedq_wake_unregister();
	}
	PG_END_TRY();
	SPI_finish();

	desc = BlessTupleDesc(desc);
	out = BoolGetDatum(found);
	return HeapTupleGetDatum(heap_form_tuple(desc, &out, &outnull));
}
