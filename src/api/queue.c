/*-------------------------------------------------------------------------
 * api/queue.c
 *	  Queues: schedq.pause_queue and schedq.resume_queue.
 *
 * A queue exists by being named; schedq.queue holds a row only for a
 * queue that was paused or resumed.  Every change of schedq.queue (these
 * functions, or DML by hand) moves the queues generation through the
 * queue_changed trigger (store/triggers.c), which claims read
 * (store/queues.c).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"

#include "shared/call.h"
#include "base/check.h"
#include "shared/plan.h"
#include "shared/wake.h"
#include "shared/commit.h"

static SchedqQuery q_set_paused =
	SCHEDQ_QUERY("INSERT INTO schedq.queue (name, paused) VALUES ($1, $2)"
				 " ON CONFLICT (name) DO UPDATE SET paused = EXCLUDED.paused",
				 TEXTOID, BOOLOID);

/*
 * Set a queue's paused flag, creating its row if needed.
 */
static void
queue_set_paused(FunctionCallInfo fcinfo, bool paused)
{
	SchedqCall call;
	Datum	   values[2];

	if (PG_ARGISNULL(0))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("queue must not be null"));
	schedq_check_name("queue", PG_GETARG_TEXT_PP(0));
	values[0] = PG_GETARG_DATUM(0);
	values[1] = BoolGetDatum(paused);

	schedq_call_begin(&call);
	schedq_plan_run(&q_set_paused, values, NULL, 0, SPI_OK_INSERT);
	schedq_call_end(&call);
	if (!paused)
		schedq_wake_all_claimers_at_commit();
}

PG_FUNCTION_INFO_V1(schedq_pause_queue);

/*
 * schedq.pause_queue(queue): no claim takes tasks from the queue until it
 * is resumed.  Running tasks are not affected.
 */
Datum
schedq_pause_queue(PG_FUNCTION_ARGS)
{
	queue_set_paused(fcinfo, true);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(schedq_resume_queue);

/*
 * schedq.resume_queue(queue): claims take from the queue again.
 */
Datum
schedq_resume_queue(PG_FUNCTION_ARGS)
{
	queue_set_paused(fcinfo, false);
	PG_RETURN_VOID();
}
