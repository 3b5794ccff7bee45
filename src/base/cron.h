/*-------------------------------------------------------------------------
 * base/cron.h
 *	  Schedules: parse cron expressions, @macros, @every and systemd
 *	  calendar events, and find when they fire next in a time zone.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_CRON_H
#define SCHEDQ_CRON_H

#include "datatype/timestamp.h"
#include "pgtime.h"

#include "base/compat.h"
#include "base/cron_field.h"

extern void	  schedq_cron_parse(const char *text, SchedqSchedule *sched);
extern pg_tz *schedq_cron_timezone(const char *name);
extern bool	  schedq_cron_next(const SchedqSchedule *sched, pg_tz *tz,
							   TimestampTz after, TimestampTz *next);

/* An interval as microseconds, a month counted as 30 days. */
extern int64 schedq_cron_interval_usecs(const Interval *span);

#endif /* SCHEDQ_CRON_H */
