/*-------------------------------------------------------------------------
 * base/cron_start.c
 *	  The next run of a schedule, knowing when the server started: what
 *	  @reboot needs and the pure parser of base/cron.c cannot know.  An
 *	  @reboot schedule's next run is the server's start while `after` is
 *	  before it, and 'infinity' after: the periodic pass arms it again
 *	  after the next start (pass/periodic.c).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "base/cron.h"
#include "base/cron_start.h"

bool
schedq_cron_start_next(const SchedqSchedule *sched, pg_tz *tz,
					   TimestampTz after, TimestampTz *next)
{
	if (sched->reboot)
	{
		if (after < PgStartTime)
			*next = PgStartTime;
		else
			TIMESTAMP_NOEND(*next);
		return true;
	}
	return schedq_cron_next(sched, tz, after, next);
}
