/*-------------------------------------------------------------------------
 * base/cron_field.h
 *	  A parsed schedule, and the pieces of the parsers that fill it.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_CRON_FIELD_H
#define SCHEDQ_CRON_FIELD_H

#include "base/compat.h"

/* Years a schedule can name: CRON_YEAR_BASE .. CRON_YEAR_BASE + 255. */
#define CRON_YEAR_BASE 1970

typedef struct SchedqSchedule
{
	bool   every; /* @every: a fixed interval from 2000-01-01 UTC */
	int64  every_usecs;
	uint64 seconds;	  /* bit n: second n (0..59) */
	uint64 minutes;	  /* bit n: minute n (0..59) */
	uint32 hours;	  /* bit n: hour n (0..23) */
	uint32 mdays;	  /* bit n: day of month n (1..31) */
	uint32 months;	  /* bit n: month n (1..12) */
	uint32 wdays;	  /* bit n: weekday n (0 = Sunday) */
	bool   mday_any;  /* day of month not restricted */
	bool   wday_any;  /* day of week not restricted */
	bool   mday_last; /* cron "$": the last day of the month too */
	bool   day_or;	  /* cron: both restricted means either */
	bool   reboot;	  /* @reboot: once after each server start */
	uint64 years[4];  /* bit n: year CRON_YEAR_BASE + n */
} SchedqSchedule;

extern PGDLLIMPORT const char *const schedq_cron_field_wday_names[];
pg_noreturn extern void				 schedq_cron_field_error(const char *text,
															 const char *detail);
extern bool schedq_cron_field_read_value(const char		  **p,
										 const char *const *names,
										 int name_base, int *value);
extern bool schedq_cron_field_parse(const char *field, int lo, int hi,
									const char *const *names, int name_base,
									const char *range, uint64 *bits, bool *any,
									const char **why);
extern void schedq_cron_field_set_all_years(SchedqSchedule *s);

#endif /* SCHEDQ_CRON_FIELD_H */
