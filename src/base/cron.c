/*-------------------------------------------------------------------------
 * base/cron.c
 *	  The schedule parser and the next-run calculation.  Pure: no database
 *	  access, only palloc and ereport, so that SQL can call it for tests
 *	  (schedq.next_runs) and a fuzzer can call it directly.
 *
 * Syntaxes:
 *	- cron, 5 fields (minute hour day-of-month month day-of-week) or 6 with
 *	  leading seconds: *, n, a-b, a-b/s, * /s, n/s (n to the end), lists; month
 *	  names jan..dec, weekday names sun..sat, weekday 7 = Sunday.  When both
 *	  day-of-month and day-of-week are restricted, either matches.
 *	- @yearly @annually @monthly @weekly @daily @midnight @hourly;
 *	  @every <interval> (no months: a fixed length, counted from
 *	  2000-01-01 00:00 UTC).
 *	- systemd calendar events (systemd.time(7)): [weekdays] [date] [time],
 *	  e.g. "Mon..Fri *-*-* 09:00:00", "*-*-01 00:00", "*:0/15",
 *	  "Sat,Sun 10:00", and minutely hourly daily weekly monthly yearly
 *	  annually quarterly semiannually.  Components: *, values, lists, a..b
 *	  ranges, /step.  Weekdays and date must both match.
 *
 * Wall-clock times are in the schedule's time zone, PostgreSQL's own
 * (pg_tzset).  A local time that a DST change skips fires once, at the
 * first instant after the gap; a local time that occurs twice fires once,
 * at its first occurrence.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "common/int.h"
#include "pgtime.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "base/cron.h"
#include "base/cron_field.h"
#include "base/cron_systemd.h"

/* Seconds from 1970-01-01 to 2000-01-01. */
#define CRON_EPOCH_DIFF                                                        \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY)
/* How many field steps the search may take before giving up. */
#define CRON_MAX_STEPS 200000

static const char *const month_names[] = { "jan", "feb", "mar", "apr", "may",
										   "jun", "jul", "aug", "sep", "oct",
										   "nov", "dec", NULL };
/*
 * Parse a classic cron expression of 5 or 6 fields.
 */
static void
cron_parse_classic(const char *text, char **fields, int n, SchedqSchedule *s)
{
	const char *why = NULL;
	int			f = 0;
	uint64		bits;
	bool		any;

	if (n == 6)
	{
		if (!schedq_cron_field_parse(fields[f++], 0, 59, NULL, 0, "-",
									 &s->seconds, &any, &why))
			schedq_cron_field_error(text, psprintf("Seconds: %s.", why));
	}
	else
		s->seconds = 1; /* at second 0 */
	if (!schedq_cron_field_parse(fields[f++], 0, 59, NULL, 0, "-", &s->minutes,
								 &any, &why))
		schedq_cron_field_error(text, psprintf("Minutes: %s.", why));
	if (!schedq_cron_field_parse(fields[f++], 0, 23, NULL, 0, "-", &bits, &any,
								 &why))
		schedq_cron_field_error(text, psprintf("Hours: %s.", why));
	s->hours = (uint32) bits;
	/* "$", alone, is the last day of the month (as pg_cron's) */
	if (strcmp(fields[f], "$") == 0)
	{
		s->mday_last = true;
		bits = 0;
		f++;
	}
	else if (!schedq_cron_field_parse(fields[f++], 1, 31, NULL, 0, "-", &bits,
									  &s->mday_any, &why))
		schedq_cron_field_error(text, psprintf("Day of month: %s.", why));
	s->mdays = (uint32) (bits << 1);
	if (!schedq_cron_field_parse(fields[f++], 1, 12, month_names, 1, "-", &bits,
								 &any, &why))
		schedq_cron_field_error(text, psprintf("Month: %s.", why));
	s->months = (uint32) (bits << 1);
	if (!schedq_cron_field_parse(fields[f++], 0, 7,
								 schedq_cron_field_wday_names, 0, "-", &bits,
								 &s->wday_any, &why))
		schedq_cron_field_error(text, psprintf("Day of week: %s.", why));
	s->wdays = (uint32) ((bits | (bits >> 7)) & 0x7F);

	/*
	 * Vixie cron's rule, also pg_cron's: a day field written with a leading
	 * star (a star alone or with a step) leaves the other day field to
	 * decide alone; when neither starts with a star (nor takes every day),
	 * either matches.
	 */
	s->day_or = !s->mday_any && !s->wday_any && fields[f - 3][0] != '*' &&
				fields[f - 1][0] != '*';
	schedq_cron_field_set_all_years(s);
}

/*
 * An interval as microseconds, counting a month as 30 days the way
 * interval comparison does.  Saturates instead of overflowing.  Here,
 * with the pure code, so that the fuzz target links it as it is.
 */
int64
schedq_cron_interval_usecs(const Interval *span)
{
	int64 days;
	int64 us;

	if (pg_mul_s64_overflow((int64) span->month, DAYS_PER_MONTH, &days) ||
		pg_add_s64_overflow(days, span->day, &days) ||
		pg_mul_s64_overflow(days, USECS_PER_DAY, &us) ||
		pg_add_s64_overflow(us, span->time, &us))
		return (span->time < 0 || span->day < 0 || span->month < 0) ?
				   PG_INT64_MIN :
				   PG_INT64_MAX;
	return us;
}

/*
 * Parse a schedule of any of the syntaxes into *s.  Raises an error with
 * a detail saying what is wrong.
 */
void
schedq_cron_parse(const char *text, SchedqSchedule *s)
{
	char *copy;
	char *tokens[8];
	int	  n = 0;
	char *p;
	static const struct
	{
		const char *name;
		const char *expansion;
	} macros[] = {
		{ "@yearly", "0 0 1 1 *" },
		{ "@annually", "0 0 1 1 *" },
		{ "@monthly", "0 0 1 * *" },
		{ "@weekly", "0 0 * * 0" },
		{ "@daily", "0 0 * * *" },
		{ "@midnight", "0 0 * * *" },
		{ "@hourly", "0 * * * *" },
		{ "minutely", "*-*-* *:*:00" },
		{ "hourly", "*-*-* *:00:00" },
		{ "daily", "*-*-* 00:00:00" },
		{ "weekly", "Mon *-*-* 00:00:00" },
		{ "monthly", "*-*-01 00:00:00" },
		{ "yearly", "*-01-01 00:00:00" },
		{ "annually", "*-01-01 00:00:00" },
		{ "quarterly", "*-01,04,07,10-01 00:00:00" },
		{ "semiannually", "*-01,07-01 00:00:00" },
	};

	memset(s, 0, sizeof(*s));
	if (text == NULL)
		schedq_cron_field_error("", "The schedule is empty.");

	/* trim and lower-case macros */
	while (isspace((unsigned char) *text))
		text++;
	copy = pstrdup(text);
	for (int i = strlen(copy) - 1; i >= 0 && isspace((unsigned char) copy[i]);
		 i--)
		copy[i] = '\0';
	if (copy[0] == '\0')
		schedq_cron_field_error(text, "The schedule is empty.");

	if (pg_strcasecmp(copy, "@reboot") == 0 ||
		pg_strcasecmp(copy, "@restart") == 0)
	{
		s->reboot = true;
		return;
	}
	if (pg_strncasecmp(copy, "@every", 6) == 0 &&
		(copy[6] == '\0' || isspace((unsigned char) copy[6])))
	{
		char	 *spec = copy + 6;
		Interval *span;

		while (isspace((unsigned char) *spec))
			spec++;
		if (*spec == '\0')
			schedq_cron_field_error(
				text,
				"@every needs an interval, for example \"@every 15 minutes\".");
		span = DatumGetIntervalP(
			DirectFunctionCall3(interval_in, CStringGetDatum(spec),
								ObjectIdGetDatum(InvalidOid),
								Int32GetDatum(-1)));
		if (span->month != 0)
			schedq_cron_field_error(
				text,
				"@every takes a fixed length: use days, not months or years.");
		s->every = true;
		s->every_usecs = schedq_cron_interval_usecs(span);
		if (s->every_usecs < USECS_PER_SEC)
			schedq_cron_field_error(
				text, "@every needs an interval of at least one second.");
		return;
	}
	for (int i = 0; i < (int) lengthof(macros); i++)
		if (pg_strcasecmp(copy, macros[i].name) == 0)
		{
			copy = pstrdup(macros[i].expansion);
			break;
		}
	if (copy[0] == '@')
		schedq_cron_field_error(
			text,
			"Unknown macro; the macros are @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, @reboot, @restart and @every <interval>.");

	for (p = strtok(copy, " \t\r\n"); p != NULL; p = strtok(NULL, " \t\r\n"))
	{
		if (n == lengthof(tokens))
			schedq_cron_field_error(text, "Too many fields.");
		tokens[n++] = p;
	}
	if (n == 5 || n == 6)
		cron_parse_classic(text, tokens, n, s);
	else if (n >= 1 && n <= 3)
		schedq_cron_systemd_parse(text, tokens, n, s);
	else
		schedq_cron_field_error(
			text,
			"A cron expression has 5 fields (or 6 with seconds); a calendar event has weekdays, a date and a time.");
}

/*
 * Look up a time zone in PostgreSQL's time zone database.  Raises an
 * error for an unknown one.
 */
pg_tz *
schedq_cron_timezone(const char *name)
{
	pg_tz *tz = (name != NULL && name[0] != '\0') ? pg_tzset(name) : NULL;

	if (tz == NULL || !pg_tz_acceptable(tz))
		ereport(
			ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			errmsg("time zone \"%s\" is not recognized", name ? name : ""),
			errhint(
				"Use a name from pg_timezone_names, such as \"Europe/Berlin\"."));
	return tz;
}

/*
 * The instant (Unix seconds) of a local wall-clock time `local` (Unix
 * seconds as if the zone were UTC).  A local time that occurs twice maps
 * to its first occurrence; one that a transition skips maps to the
 * transition itself, the first instant after the gap.
 */
static pg_time_t
cron_local_to_instant(pg_time_t local, pg_tz *tz)
{
	pg_time_t t = local - 2 * SECS_PER_DAY;

	for (int guard = 0; guard < 16; guard++)
	{
		long	  before_off, after_off;
		int		  before_dst, after_dst;
		pg_time_t boundary;
		int r = pg_next_dst_boundary(&t, &before_off, &before_dst, &boundary,
									 &after_off, &after_dst, tz);

		if (r <= 0 || boundary > local + 2 * SECS_PER_DAY)
			return local - before_off;
		if (local - before_off < boundary)
			return local - before_off; /* exists before the transition */
		if (local - after_off < boundary)
			return boundary; /* in the gap */
		t = boundary;		 /* exists after it; maybe another follows */
	}
	return local;
}

static bool
cron_year_ok(const SchedqSchedule *s, int year)
{
	int i = year - CRON_YEAR_BASE;

	return i >= 0 && i < 256 &&
		   (s->years[i / 64] & (UINT64CONST(1) << (i % 64))) != 0;
}

static int
cron_days_in_month(int year, int month)
{
	static const int days[] = { 0,	31, 28, 31, 30, 31, 30,
								31, 31, 30, 31, 30, 31 };

	if (month == 2 && ((year % 4 == 0 && year % 100 != 0) || year % 400 == 0))
		return 29;
	return days[month];
}

static bool
cron_day_ok(const SchedqSchedule *s, int year, int month, int day)
{
	int	 wd = (date2j(year, month, day) + 1) % 7; /* 0 = Sunday */
	bool mday = (day >= 1 && day <= 31 && (s->mdays & (((uint32) 1) << day))) ||
				(s->mday_last && day == cron_days_in_month(year, month));
	bool wday = (s->wdays & (((uint32) 1) << wd)) != 0;

	if (s->day_or)
		return mday || wday;
	return mday && wday;
}

/*
 * The first time the schedule fires strictly after `after`, in *next.
 * Returns false when it never does (within the years it can name, or for
 * @every within the range of valid timestamps).
 */
bool
schedq_cron_next(const SchedqSchedule *s, pg_tz *tz, TimestampTz after,
				 TimestampTz *next)
{
	pg_time_t	  start, prev;
	struct pg_tm *tm;
	int			  y, mo, d, h, mi, sec;

	if (s->reboot)
		return false; /* its callers know the server's start */
	if (s->every)
	{
		int64 k = after / s->every_usecs;

		if (after < 0 && after % s->every_usecs != 0)
			k--;
		if (pg_mul_s64_overflow(k + 1, s->every_usecs, next) ||
			!IS_VALID_TIMESTAMP(*next))
			return false;
		return true;
	}

	/* whole seconds: the first candidate is the second after `after` */
	start = (pg_time_t) (after / USECS_PER_SEC) + CRON_EPOCH_DIFF;
	if (after < 0 && after % USECS_PER_SEC != 0)
		start--;
	start++;

	/*
	 * Search from the local time one second after that of start - 1, not
	 * from the local time of start: when start ends a DST gap, the skipped
	 * local times map to start and must be candidates.
	 */
	prev = start - 1;
	tm = pg_localtime(&prev, tz);
	if (tm == NULL)
		return false;
	y = tm->tm_year + 1900;
	mo = tm->tm_mon + 1;
	d = tm->tm_mday;
	h = tm->tm_hour;
	mi = tm->tm_min;
	sec = tm->tm_sec;
	if (++sec > 59)
	{
		sec = 0;
		if (++mi > 59)
		{
			mi = 0;
			if (++h > 23)
				h = 0, d++;
		}
	}

	for (int step = 0; step < CRON_MAX_STEPS; step++)
	{
		pg_time_t local, instant;

		if (y >= CRON_YEAR_BASE + 256)
			return false;
		if (!cron_year_ok(s, y))
		{
			y++, mo = 1, d = 1, h = 0, mi = 0, sec = 0;
			continue;
		}
		if (!(s->months & (((uint32) 1) << mo)))
		{
			if (++mo > 12)
				y++, mo = 1;
			d = 1, h = 0, mi = 0, sec = 0;
			continue;
		}
		if (d > cron_days_in_month(y, mo) || !cron_day_ok(s, y, mo, d))
		{
			if (++d > cron_days_in_month(y, mo))
			{
				d = 1;
				if (++mo > 12)
					y++, mo = 1;
			}
			h = 0, mi = 0, sec = 0;
			continue;
		}
		if (!(s->hours & (((uint32) 1) << h)))
		{
			if (++h > 23)
				h = 0, d++;
			mi = 0, sec = 0;
			continue;
		}
		if (!(s->minutes & (UINT64CONST(1) << mi)))
		{
			if (++mi > 59)
				mi = 0, h++;
			sec = 0;
			if (h > 23)
				h = 0, d++;
			continue;
		}
		if (!(s->seconds & (UINT64CONST(1) << sec)))
		{
			if (++sec > 59)
			{
				sec = 0;
				if (++mi > 59)
				{
					mi = 0;
					if (++h > 23)
						h = 0, d++;
				}
			}
			continue;
		}

		local =
			(pg_time_t) (date2j(y, mo, d) - UNIX_EPOCH_JDATE) * SECS_PER_DAY +
			h * SECS_PER_HOUR + mi * SECS_PER_MINUTE + sec;
		instant = cron_local_to_instant(local, tz);
		if (instant >= start)
		{
			*next = (TimestampTz) (instant - CRON_EPOCH_DIFF) * USECS_PER_SEC;
			return true;
		}
		/* the first occurrence is already past: try the next second */
		if (++sec > 59)
		{
			sec = 0;
			if (++mi > 59)
			{
				mi = 0;
				if (++h > 23)
					h = 0, d++;
			}
		}
	}
	return false;
}
