/*-------------------------------------------------------------------------
 * await.c
 *	  What every waiting claim does with a wake-up it cannot use.
 *
 * A wake-up names its task, and the waiters' table can only guess who
 * could take it (wake.c).  A waiter whose look found nothing passes the
 * wake-up on to the next waiter while the task is still there for some
 * claim: available (in the snapshot: a claim in progress still shows it
 * available, and the chain then ends at the first look after that claim
 * commits), its queue not paused and its budgets with room
 * (resume_queue and set_budget wake every waiter when those change).  schedq_await_pass_on does
 * that, for claim(wait => ...).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/timestamp.h"

#include "await.h"
#include "plan.h"
#include "wake.h"

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
	const SchedqWakeTask *wake = schedq_waiter_woken_for();
	Datum				  values[4];

	if (wake == NULL)
		return;
	values[0] = Int64GetDatum(-(int64) wake->priority);
	values[1] = TimestampTzGetDatum(wake->run_at);
	values[2] = Int64GetDatum(wake->id);
	values[3] = Int32GetDatum((int32) wake->queue);
	if (schedq_run(&await_still_there, values, NULL, 1, SPI_OK_SELECT) > 0)
		schedq_waiter_pass_on();
}
