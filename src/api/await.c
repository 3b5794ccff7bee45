/*-------------------------------------------------------------------------
 * api/await.c
 *	  schedq.await_task and schedq.await_queue: wait for a task holding
 *	  no snapshot and no lock; and what every waiting claim does with a
 *	  wake-up it cannot use.
 *
 * A worker can wait in two ways.  claim(wait => ...) waits inside its
 * statement: the statement's snapshot stays registered, so the session's
 * xmin holds back VACUUM of every table of the database, and it keeps
 * the locks its looks took on schedq's tables and indexes, so ALTER
 * EXTENSION, REINDEX or DROP EXTENSION queue behind it.  await_task is a
 * procedure that waits between transactions instead: CALLed outside a
 * transaction block it runs non-atomically, so it can commit.  It
 * registers as a waiter (shared/wake.c), commits what the caller's transaction
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
 * claim's transaction lasts.  So the look is the claim rule
 * (store/task_claim.c) for one task, with FOR KEY SHARE SKIP LOCKED,
 * committed at once.  A look that locked
 * a row commits without waiting for its WAL to be flushed: losing that
 * commit in a crash loses nothing but the lock.
 *
 * A wake-up names its task, and the waiters' table can only guess who
 * could take it (shared/wake.c).  A waiter whose look found nothing passes the
 * wake-up on to the next waiter while the task is still there for some
 * claim: available (in the snapshot: a claim in progress still shows it
 * available, and the chain then ends at the first look after that claim
 * commits), its queue not paused and its budgets with room (resume_queue
 * and set_budget wake every waiter when those change).
 * schedq_await_pass_on does that, for await_task and claim(wait => ...)
 * alike; on a distributed schedq by a read of the waiter's one queue (the
 * wake-up knows its queue only by a hash, and a read of every shard is
 * one Citus cannot plan with the budget filter's parameters).
 *
 * Both give up with 25006 when the server is or becomes read-only
 * (shared/wake.c): a worker waiting on a primary that a failover is
 * fencing off is told to reconnect, not left waiting until its timeout.
 *
 * await_queue is await_task for one queue.  On a distributed schedq
 * Citus runs it on the node that holds its queue's shard (as it runs
 * claim_queue, api/claim.c): there its look is the distributed claim's
 * rule (store/task_citus.c), and it looks again once a second for what
 * that node's wake-ups miss.
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
#include "base/check.h"
#include "base/compat.h"
#include "base/cron.h"
#include "store/floor.h"
#include "shared/metrics.h"
#include "shared/plan.h"
#include "shared/shm.h"
#include "shared/wake.h"
#include "store/task.h"
#include "store/task_citus.h"
#include "store/task_claim.h"

/*
 * After a look of a waiting claim that found nothing it could take: if
 * the waiter was woken for a task that is still there for some claim,
 * pass the wake-up on to the next waiter that could take it.  Inside the
 * call bracket.
 */
void
schedq_await_pass_on(const SchedqClaimRequest *r, bool distributed)
{
	const SchedqWakeTask *wake = schedq_wake_woken_for();

	if (wake != NULL && (distributed ? schedq_task_citus_still_there(wake, r) :
									   schedq_task_claim_still_there(wake)))
		schedq_wake_pass_on();
}

/* What one await_task or await_queue asks for, checked. */
typedef struct AwaitArgs
{
	SchedqClaimRequest req; /* the queues, caps and filter of the look */
	int64			   wait_us;
	bool			   distributed; /* await_queue on a distributed schedq */
	Datum			   queue;		/* await_queue's queue */
} AwaitArgs;

/*
 * One look, in the current transaction (the caller commits it): is there
 * a task the caller could claim?  If not, a wake-up this waiter cannot
 * use goes on.
 */
static bool
await_look(AwaitArgs *args)
{
	SchedqCall call;
	bool	   found;

	/* SET LOCAL synchronous_commit = off: see the header */
	(void) set_config_option("synchronous_commit", "off", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
	schedq_call_begin(&call);
	args->req.caller = call.caller;
	args->req.admin = call.admin;
	if (args->distributed)
		found = schedq_task_citus_look(&args->req);
	else
	{
		schedq_floor_probe_if_due();
		schedq_floor_get(&args->req.floor);
		found = schedq_task_claim_look(&args->req);
	}
	if (!found)
		schedq_await_pass_on(&args->req, args->distributed);
	schedq_call_end(&call);
	return found;
}

/* Refuse a wait on another node than the queue's (in a call bracket). */
static void
await_require_local(Datum queue)
{
	SchedqCall call;

	schedq_call_begin(&call);
	schedq_task_citus_require_local(queue, "await_queue");
	schedq_call_end(&call);
}

/*
 * Wait as args ask and return the procedure's row (woken).  Needs a
 * non-atomic context: it commits the transaction it is called in.
 */
static Datum
await_run(FunctionCallInfo fcinfo, const char *name, AwaitArgs *args)
{
	CallContext *context = (CallContext *) fcinfo->context;
	TimestampTz	 deadline;
	bool		 found = false;
	TupleDesc	 desc;
	Datum		 out;
	bool		 outnull = false;

	/* the arguments first: a bad one is the same error anywhere */
	if (context == NULL || !IsA(context, CallContext) || context->atomic)
		ereport(
			ERROR, errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
			errmsg("%s cannot run inside a transaction block", name),
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
	/* wake-ups are one node's: those of the node with the queue's shard */
	if (args->distributed)
		await_require_local(args->queue);
	deadline = GetCurrentTimestamp() + args->wait_us;
	PG_TRY();
	{
		/* the caller's snapshot (the arguments') and locks go */
		SPI_commit();
		for (;;)
		{
			TimestampTz until = deadline;

			/* register before each look: a task committed after it wakes us */
			schedq_wake_register(args->req.queues, args->req.caps, false);
			/* a read-only server: 25006 rather than the look's own error */
			schedq_wake_check_writable();
			found = await_look(args);
			/* the look's snapshot and locks go */
			SPI_commit();
			if (found)
				break;
			if (args->distributed)
				until = Min(deadline,
							GetCurrentTimestamp() + SCHEDQ_CITUS_RELOOK_USECS);
			if (!schedq_wake_sleep(until, SCHEDQ_WAIT_EVENT("SchedqAwait")) &&
				GetCurrentTimestamp() >= deadline)
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

PG_FUNCTION_INFO_V1(schedq_await_task);

/*
 * CALL schedq.await_task(queues, caps, wait, INOUT woken): wait until
 * there is a task this worker could claim (woken = true) or wait has
 * passed (false), holding no snapshot and no lock meanwhile.
 */
Datum
schedq_await_task(PG_FUNCTION_ARGS)
{
	AwaitArgs args;

	memset(&args, 0, sizeof(args));
	args.req.filter = CLAIM_ALL_QUEUES;
	if (!PG_ARGISNULL(0))
	{
		ArrayType *arr = PG_GETARG_ARRAYTYPE_P(0);
		int		   nqueues = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));

		schedq_check_names("queues", arr, SCHEDQ_MAX_QUEUES);
		args.req.queues = arr;
		args.req.filter =
			(nqueues == 1 && ARR_NDIM(arr) == 1 && ARR_LBOUND(arr)[0] == 1) ?
				CLAIM_ONE_QUEUE :
				CLAIM_SOME_QUEUES;
	}
	args.req.caps = schedq_check_caps_arg(fcinfo, 1);
	args.wait_us = schedq_check_wait_arg(fcinfo, 2);
	schedq_task_refuse_distributed(
		"schedq.await_task",
		"A task wakes the workers waiting on the node that holds its "
		"queue's shard; await_task would wait on this node's wake-ups.",
		"Wait on one queue with schedq.await_queue(queue, wait => ...).");
	return await_run(fcinfo, "schedq.await_task", &args);
}

PG_FUNCTION_INFO_V1(schedq_await_queue);

/*
 * CALL schedq.await_queue(queue, caps, wait, INOUT woken): exactly as
 * await_task(ARRAY[queue], caps, wait).  On a distributed schedq it is a
 * distributed procedure by queue (schedq.distribute), which Citus runs on
 * the node that holds its queue's shard; there it waits on that node's
 * wake-ups and looks again once a second.  Anywhere else it refuses to
 * wait (0A000).
 */
Datum
schedq_await_queue(PG_FUNCTION_ARGS)
{
	AwaitArgs args;
	Datum	  queue;

	memset(&args, 0, sizeof(args));
	if (PG_ARGISNULL(0))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("queue must not be null"),
				errhint("To wait for a task of any queue, call await_task."));
	queue = PG_GETARG_DATUM(0);
	args.req.queues =
		construct_array(&queue, 1, TEXTOID, -1, false, TYPALIGN_INT);
	schedq_check_names("queues", args.req.queues, SCHEDQ_MAX_QUEUES);
	args.req.filter = CLAIM_ONE_QUEUE;
	args.req.caps = schedq_check_caps_arg(fcinfo, 1);
	args.wait_us = schedq_check_wait_arg(fcinfo, 2);
	args.queue = queue;
	args.distributed = schedq_task_distributed();
	return await_run(fcinfo, "schedq.await_queue", &args);
}
