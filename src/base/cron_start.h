/*-------------------------------------------------------------------------
 * base/cron_start.h
 *	  The next run of a schedule, @reboot included.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_CRON_START_H
#define SCHEDQ_CRON_START_H

#include "base/cron.h"

extern bool schedq_cron_start_next(const SchedqSchedule *sched, pg_tz *tz,
								   TimestampTz after, TimestampTz *next);

#endif /* SCHEDQ_CRON_START_H */
