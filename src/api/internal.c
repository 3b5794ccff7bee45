/*-------------------------------------------------------------------------
 * api/internal.c
 *	  The internal SQL functions: one pass of the scheduler, at a given
 *	  time (schedq._promote_once, _reap_once, _periodic_once: for tests
 *	  and for running a pass by hand with the scheduler disabled), and
 *	  schedq._next_run, which the periodic pass's statement calls.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "base/cron.h"
#include "base/cron_start.h"
#include "pass/periodic.h"
#include "pass/promote.h"
#include "pass/reaper.h"
#include "shared/call.h"

PG_FUNCTION_INFO_V1(schedq_promote_once);

/*
 * schedq._promote_once(now): one promotion pass, as the scheduler runs it,
 * at the given time.  Returns how many tasks became available.
 */
Datum
schedq_promote_once(PG_FUNCTION_ARGS)
{
	SchedqCall call;
	bool	   more = false;
	int		   promoted;

	schedq_call_begin(&call);
	promoted = schedq_promote_pass(PG_GETARG_TIMESTAMPTZ(0), &more);
	schedq_call_end(&call);
	PG_RETURN_INT32(promoted);
}

PG_FUNCTION_INFO_V1(schedq_reap_once);

/*
 * schedq._reap_once(now): one reaper pass, as the scheduler runs it, at
 * the given time.  Returns how many attempts were taken back.
 */
Datum
schedq_reap_once(PG_FUNCTION_ARGS)
{
	SchedqCall call;
	bool	   more = false;
	int		   reaped;

	schedq_call_begin(&call);
	reaped = schedq_reaper_pass(PG_GETARG_TIMESTAMPTZ(0), &more);
	schedq_call_end(&call);
	PG_RETURN_INT32(reaped);
}

PG_FUNCTION_INFO_V1(schedq_periodic_once);

/*
 * schedq._periodic_once(now): one periodic pass at the given time.
 * Returns how many ticks fired.
 */
Datum
schedq_periodic_once(PG_FUNCTION_ARGS)
{
	SchedqCall call;
	bool	   more = false;
	int		   fired;

	schedq_call_begin(&call);
	fired = schedq_periodic_pass(PG_GETARG_TIMESTAMPTZ(0), &more);
	schedq_call_end(&call);
	PG_RETURN_INT32(fired);
}

PG_FUNCTION_INFO_V1(schedq_next_run);

/*
 * schedq._next_run(schedule, timezone, after): the first run after, or
 * NULL if there is none.  Used by the periodic pass.
 */
Datum
schedq_next_run(PG_FUNCTION_ARGS)
{
	SchedqSchedule sched;
	TimestampTz	   next;

	schedq_cron_parse(text_to_cstring(PG_GETARG_TEXT_PP(0)), &sched);
	if (!schedq_cron_start_next(&sched,
								schedq_cron_timezone(
									text_to_cstring(PG_GETARG_TEXT_PP(1))),
								PG_GETARG_TIMESTAMPTZ(2), &next))
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(next);
}
