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

/* Years a schedule can name: CRON_YEAR_BASE .. CRON_YEAR_BASE + 255. */
#define CRON_YEAR_BASE 1970

typedef struct SchedqSchedule
{
	bool   every; /* @every: a fixed interval from 2000-01-01 UTC */
	int64  every_usecs;
	uint64 seconds;	 /* bit n: second n (0..59) */
	uint64 minutes;	 /* bit n: minute n (0..59) */
	uint32 hours;	 /* bit n: hour n (0..23) */
	uint32 mdays;	 /* bit n: day of month n (1..31) */
	uint32 months;	 /* bit n: month n (1..12) */
	uint32 wdays;	 /* bit n: weekday n (0 = Sunday) */
	bool   mday_any; /* day of month not restricted */
	bool   wday_any; /* day of week not restricted */
	bool   day_or;	 /* cron: both restricted means either */
	uint64 years[4]; /* bit n: year CRON_YEAR_BASE + n */
} SchedqSchedule;

extern void	  schedq_cron_parse(const char *text, SchedqSchedule *sched);
extern pg_tz *schedq_cron_timezone(const char *name);
extern bool	  schedq_cron_next(const SchedqSchedule *sched, pg_tz *tz,
							   TimestampTz after, TimestampTz *next);

/* An interval as microseconds, a month counted as 30 days. */
extern int64 schedq_cron_interval_usecs(const Interval *span);

#endif /* SCHEDQ_CRON_H */
