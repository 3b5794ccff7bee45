/*-------------------------------------------------------------------------
 * fuzz_cron.c
 *	  libFuzzer target for src/cron.c: parse the input (up to 256 bytes) as
 *	  a schedule and, when it parses, compute CHAIN successive next runs
 *	  from a set of "after" values in zones of the shim's model, checking
 *	  each result against an independent oracle.  Any failed check abort()s,
 *	  which libFuzzer reports as a crash; the message names the schedule,
 *	  the zone and the instants.
 *
 * Zones: UTC and America/New_York always, about half of the others
 * (chosen by a hash of the input, so a run is reproducible).  Afters: a
 * pseudo-random instant of 1965..2234 from the hash, 2000-01-01 and 1 us
 * before it, a negative fractional one of 1969, New York's 2026 gap and
 * overlap, 1 s, 1 us and some hours before the zone's next transition;
 * in the first two zones also -4713-11-24 (MIN_TIMESTAMP), the last valid
 * instant, and -infinity or infinity (INT64_MIN/MAX, which
 * schedq._next_run can pass).
 *
 * Checks:
 *	- a parse error is an ERROR with a known SQLSTATE and a message
 *	  (cron.c's own also have a detail); parsing does not touch the input
 *	  and gives the same schedule twice;
 *	- a parsed schedule's bitmaps hold only values of their fields, and the
 *	  "any" flags agree with them;
 *	- schedq_cron_next never raises an error; a result is a valid
 *	  timestamp, a whole second, strictly after `after`;
 *	- @reboot: never a next run (the server's start is its callers');
 *	- @every: the result is exactly the next multiple of the interval;
 *	- calendar schedules: the result fires (its local time matches and is
 *	  the first occurrence of that local time, or it ends a DST gap that
 *	  skipped a matching local time); nothing fires between `after` and it
 *	  (by brute force over short spans); asking again from any point in
 *	  between gives the same result; "never" is only answered when no day
 *	  from two days on matches.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "datatype/timestamp.h"
#include "pgtime.h"
#include "utils/datetime.h"
#include "utils/errcodes.h"

#include "base/compat.h"
#include "base/cron.h"
#include "shim.h"

#undef fprintf
#undef vfprintf
#undef snprintf
#undef vsnprintf

#define FUZZ_MAX_INPUT 256			/* longest schedule looked at */
#define CHAIN 4					/* successive runs from each `after` */
#define BRUTE_FORCE_SECS (2 * 3600)	/* brute-force spans up to this long */
#define MAX_ZONES 16
#define MAX_AFTERS 16

/* Seconds from 1970-01-01 to 2000-01-01. */
#define EPOCH_DIFF ((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY)

extern int	LLVMFuzzerInitialize(int *argc, char ***argv);
extern int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static pg_tz *zones[MAX_ZONES];
static const char *zone_names[MAX_ZONES];
static int	nzones = 0;
static pg_tz *utc;

/* The input being run, for failure reports. */
static const char *current_input;

pg_noreturn static void
pg_attribute_printf(1, 2)
fail(const char *fmt,...)
{
	va_list		args;

	fprintf(stderr, "\nfuzz_cron: CHECK FAILED for schedule \"%s\"\n  ",
			current_input ? current_input : "(none)");
	va_start(args, fmt);
	vfprintf(stderr, fmt, args);
	va_end(args);
	fprintf(stderr, "\n");
	abort();
}

/* ----------------------------------------------------------------
 * Calls that may raise an ERROR, caught.
 * ----------------------------------------------------------------
 */
static bool
try_parse(const char *text, SchedqSchedule *s)
{
	jmp_buf		catcher;
	jmp_buf    *save = fuzz_error_jmp;
	volatile bool ok = false;

	if (setjmp(catcher) == 0)
	{
		fuzz_error_jmp = &catcher;
		schedq_cron_parse(text, s);
		ok = true;
	}
	fuzz_error_jmp = save;
	return ok;
}

static pg_tz *
try_timezone(const char *name)
{
	jmp_buf		catcher;
	jmp_buf    *save = fuzz_error_jmp;
	pg_tz	   *volatile tz = NULL;

	if (setjmp(catcher) == 0)
	{
		fuzz_error_jmp = &catcher;
		tz = schedq_cron_timezone(name);
	}
	fuzz_error_jmp = save;
	return tz;
}

/* ----------------------------------------------------------------
 * Time helpers
 * ----------------------------------------------------------------
 */
static TimestampTz
ts(int y, int mo, int d, int h, int mi, int s)
{
	return ((int64) (date2j(y, mo, d) - POSTGRES_EPOCH_JDATE) * SECS_PER_DAY +
			h * SECS_PER_HOUR + mi * SECS_PER_MINUTE + s) * USECS_PER_SEC;
}

static int64
floor_div(int64 a, int64 b)
{
	int64		q = a / b;

	if (a % b != 0 && ((a < 0) != (b < 0)))
		q--;
	return q;
}

/* Unix seconds <-> TimestampTz */
static pg_time_t
unix_of(TimestampTz t)
{
	return floor_div(t, USECS_PER_SEC) + EPOCH_DIFF;
}

static TimestampTz
ts_of_unix(pg_time_t t)
{
	return (t - EPOCH_DIFF) * USECS_PER_SEC;
}

/* ----------------------------------------------------------------
 * The oracle: what fires when, from the schedule's bitmaps alone.
 * ----------------------------------------------------------------
 */
static bool
bit64(uint64 bits, int n)
{
	return n >= 0 && n < 64 && (bits & (UINT64CONST(1) << n)) != 0;
}

static bool
year_matches(const SchedqSchedule *s, int year)
{
	int			i = year - CRON_YEAR_BASE;

	return i >= 0 && i < 256 && bit64(s->years[i / 64], i % 64);
}

/* Days of a month, the oracle's own: the day before the next month's 1st. */
static int
days_in_month_of(int year, int mon)
{
	int			next = mon == 12 ? date2j(year + 1, 1, 1) : date2j(year, mon + 1, 1);

	return next - date2j(year, mon, 1);
}

static bool
day_matches(const SchedqSchedule *s, int year, int mon, int mday, int wday)
{
	bool		m,
				w;

	if (!year_matches(s, year) || !bit64(s->months, mon))
		return false;
	m = bit64(s->mdays, mday) ||
		(s->mday_last && mday == days_in_month_of(year, mon));
	w = bit64(s->wdays, wday);
	return s->day_or ? (m || w) : (m && w);
}

static bool
tm_matches(const SchedqSchedule *s, const struct pg_tm *tm)
{
	return day_matches(s, tm->tm_year + 1900, tm->tm_mon + 1, tm->tm_mday, tm->tm_wday) &&
		bit64(s->hours, tm->tm_hour) &&
		bit64(s->minutes, tm->tm_min) &&
		bit64(s->seconds, tm->tm_sec);
}

/* Does a local wall-clock time in [l0, l1) match?  (Unix seconds as UTC.) */
static bool
local_range_matches(const SchedqSchedule *s, pg_time_t l0, pg_time_t l1)
{
	pg_time_t	m = floor_div(l0, 60) * 60;

	for (; m < l1; m += 60)
	{
		struct pg_tm *tm = pg_localtime(&m, utc);
		pg_time_t	from = Max(m, l0);
		pg_time_t	to = Min(m + 60, l1);

		if (!day_matches(s, tm->tm_year + 1900, tm->tm_mon + 1, tm->tm_mday, tm->tm_wday) ||
			!bit64(s->hours, tm->tm_hour) || !bit64(s->minutes, tm->tm_min))
			continue;
		for (pg_time_t t = from; t < to; t++)
			if (bit64(s->seconds, (int) (t - m)))
				return true;
	}
	return false;
}

static long
offset_at(pg_tz *tz, pg_time_t t)
{
	return pg_localtime(&t, tz)->tm_gmtoff;
}

/* Is no earlier instant at the same local time as t? */
static bool
first_occurrence(pg_tz *tz, pg_time_t t, long off)
{
	long		offsets[2];
	int			n = fuzz_tz_offsets(tz, offsets);

	for (int i = 0; i < n; i++)
		if (offsets[i] > off && offset_at(tz, t + off - offsets[i]) == offsets[i])
			return false;
	return true;
}

/*
 * Does the schedule fire at instant t?  At a matching local time's first
 * occurrence, and at the end of a gap that skipped a matching local time.
 */
static bool
fires(const SchedqSchedule *s, pg_tz *tz, pg_time_t t)
{
	struct pg_tm tm = *pg_localtime(&t, tz);
	long		off_before = offset_at(tz, t - 1);

	if (tm_matches(s, &tm) && first_occurrence(tz, t, tm.tm_gmtoff))
		return true;
	if (tm.tm_gmtoff > off_before &&
		local_range_matches(s, t + off_before, t + tm.tm_gmtoff))
		return true;
	return false;
}

/*
 * The first instant in [from, to) at which the schedule fires, or -1: walk
 * the stretches of constant UTC offset between transitions, and in each the
 * local minutes, looking at single seconds only in matching minutes.
 */
static pg_time_t
first_firing(const SchedqSchedule *s, pg_tz *tz, pg_time_t from, pg_time_t to)
{
	pg_time_t	u = from;

	while (u < to)
	{
		long		off = offset_at(tz, u);
		long		off_before = offset_at(tz, u - 1);
		long		b_off,
					a_off;
		int			b_dst,
					a_dst;
		pg_time_t	boundary;
		pg_time_t	end = to;

		if (pg_next_dst_boundary(&u, &b_off, &b_dst, &boundary, &a_off, &a_dst, tz) == 1 &&
			boundary < end)
			end = boundary;
		if (b_off != off)
			fail("pg_next_dst_boundary and pg_localtime disagree at " INT64_FORMAT, u);
		/* u ends a gap that skipped a matching local time */
		if (off > off_before && local_range_matches(s, u + off_before, u + off))
			return u;
		/* local times u + off .. end - 1 + off */
		for (pg_time_t m = floor_div(u + off, 60) * 60; m < end + off; m += 60)
		{
			struct pg_tm *tm = pg_localtime(&m, utc);

			if (!day_matches(s, tm->tm_year + 1900, tm->tm_mon + 1, tm->tm_mday, tm->tm_wday) ||
				!bit64(s->hours, tm->tm_hour) || !bit64(s->minutes, tm->tm_min))
				continue;
			for (pg_time_t l = Max(m, u + off); l < Min(m + 60, end + off); l++)
				if (bit64(s->seconds, (int) (l - m)) && first_occurrence(tz, l - off, off))
					return l - off;
		}
		u = end;
	}
	return -1;
}

/*
 * The last local day (days from 1970-01-01) on which the schedule can fire,
 * or -1 if none: a backward walk over the calendar from 2225-12-31.
 */
static int64
last_matching_day(const SchedqSchedule *s)
{
	int			y = CRON_YEAR_BASE + 255,
				mon = 12,
				d = 31;
	int64		day = date2j(y, mon, d) - UNIX_EPOCH_JDATE;
	int			wday = (int) ((day + 4) % 7);
	static const int mlen[] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	for (; day >= 0; day--)
	{
		if (day_matches(s, y, mon, d, wday))
			return day;
		wday = (wday + 6) % 7;
		if (--d == 0)
		{
			if (--mon == 0)
				mon = 12, y--;
			d = mlen[mon] + (mon == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0));
		}
	}
	return -1;
}

/* ----------------------------------------------------------------
 * Checks
 * ----------------------------------------------------------------
 */
static const char *
sqlstate_text(int code)
{
	static char buf[6];

	for (int i = 0; i < 5; i++)
	{
		buf[i] = PGUNSIXBIT(code);
		code >>= 6;
	}
	buf[5] = '\0';
	return buf;
}

static void
check_parse_error(void)
{
	const FuzzError *e = &fuzz_last_error;

	if (e->elevel != ERROR)
		fail("parse error with elevel %d", e->elevel);
	if (e->message == NULL || e->message[0] == '\0')
		fail("parse error without a message");
	if (e->sqlerrcode == ERRCODE_INVALID_PARAMETER_VALUE)
	{
		if (e->detail == NULL || e->detail[0] == '\0')
			fail("parse error without a detail: %s", e->message);
	}
	else if (e->sqlerrcode != ERRCODE_INVALID_DATETIME_FORMAT &&
			 e->sqlerrcode != ERRCODE_DATETIME_VALUE_OUT_OF_RANGE)
		fail("parse error with an unexpected SQLSTATE %s: %s",
			 sqlstate_text(e->sqlerrcode), e->message);
}

static void
check_schedule(const SchedqSchedule *s)
{
	if (s->reboot)
		return;
	if (s->every)
	{
		if (s->every_usecs < USECS_PER_SEC)
			fail("@every of " INT64_FORMAT " us", s->every_usecs);
		return;
	}
	if (s->seconds == 0 || (s->seconds >> 60) != 0)
		fail("seconds bitmap %llx", (unsigned long long) s->seconds);
	if (s->minutes == 0 || (s->minutes >> 60) != 0)
		fail("minutes bitmap %llx", (unsigned long long) s->minutes);
	if (s->hours == 0 || (s->hours >> 24) != 0)
		fail("hours bitmap %x", s->hours);
	if ((s->mdays == 0 && !s->mday_last) || (s->mdays & 1) != 0)
		fail("days of month bitmap %x", s->mdays);
	if (s->months == 0 || (s->months & ~UINT32_C(0x1FFE)) != 0)
		fail("months bitmap %x", s->months);
	if (s->wdays == 0 || (s->wdays >> 7) != 0)
		fail("weekdays bitmap %x", s->wdays);
	if ((s->years[0] | s->years[1] | s->years[2] | s->years[3]) == 0)
		fail("no years");
	if (s->mday_any && s->mdays != UINT32_C(0xFFFFFFFE))
		fail("mday_any with days of month %x", s->mdays);
	if (s->wday_any && s->wdays != 0x7F)
		fail("wday_any with weekdays %x", s->wdays);
	if (s->day_or && (s->mday_any || s->wday_any))
		fail("day_or with an unrestricted day field");
}

static const char *
ts_text(TimestampTz t)
{
	static char buf[4][96];
	static int	n = 0;
	char	   *out = buf[n++ % 4];
	pg_time_t	u = unix_of(t);
	struct pg_tm *tm = pg_localtime(&u, utc);

	if (tm == NULL)
		snprintf(out, sizeof(buf[0]), INT64_FORMAT, t);
	else
		snprintf(out, sizeof(buf[0]), "%04d-%02d-%02d %02d:%02d:%02d.%06lld UTC (" INT64_FORMAT ")",
				 tm->tm_year + 1900, tm->tm_mon + 1, tm->tm_mday, tm->tm_hour,
				 tm->tm_min, tm->tm_sec,
				 (long long) (t - floor_div(t, USECS_PER_SEC) * USECS_PER_SEC), t);
	return out;
}

typedef struct Run
{
	const SchedqSchedule *s;
	pg_tz	   *tz;
	const char *zone;
	int64		last_day;		/* last_matching_day() */
} Run;

static bool
next_run(const Run *r, TimestampTz after, TimestampTz *next)
{
	*next = 0;
	/* no catcher: an ERROR here aborts */
	return schedq_cron_next(r->s, r->tz, after, next);
}

static void
check_every(const Run *r, TimestampTz after, bool found, TimestampTz next)
{
	int64		e = r->s->every_usecs;
	__int128	want = ((__int128) floor_div(after, e) + 1) * e;
	bool		representable = want <= PG_INT64_MAX && want >= PG_INT64_MIN;

	if (found && !IS_VALID_TIMESTAMP(next))
		fail("@every " INT64_FORMAT " us after %s gives %s, not a valid timestamp",
			 e, ts_text(after), ts_text(next));
	if (found && (!representable || next != (int64) want))
		fail("@every " INT64_FORMAT " us after %s gives %s, not the next multiple",
			 e, ts_text(after), ts_text(next));
	if (!found && representable && IS_VALID_TIMESTAMP((int64) want))
		fail("@every " INT64_FORMAT " us after %s gives none, wanted %s",
			 e, ts_text(after), ts_text((int64) want));
}

static void
check_calendar(const Run *r, TimestampTz after, bool found, TimestampTz next,
			   bool thorough)
{
	pg_time_t	start = unix_of(after) + 1;
	pg_time_t	t;
	TimestampTz again;

	if (!found)
	{
		struct pg_tm *tm;
		int64		start_day;

		/* -infinity and infinity, and beyond the years: nothing to say */
		if (!IS_VALID_TIMESTAMP(after))
			return;
		tm = pg_localtime(&start, r->tz);
		start_day = date2j(tm->tm_year + 1900, tm->tm_mon + 1, tm->tm_mday) - UNIX_EPOCH_JDATE;
		if (r->last_day >= 0 && r->last_day >= start_day + 2)
			fail("%s: never fires after %s, but day " INT64_FORMAT " matches",
				 r->zone, ts_text(after), r->last_day);
		return;
	}

	if (!IS_VALID_TIMESTAMP(next))
		fail("%s: after %s gives %s, not a valid timestamp", r->zone,
			 ts_text(after), ts_text(next));
	if (next <= after)
		fail("%s: after %s gives %s, not later", r->zone, ts_text(after), ts_text(next));
	if (next % USECS_PER_SEC != 0)
		fail("%s: after %s gives %s, not a whole second", r->zone,
			 ts_text(after), ts_text(next));
	t = unix_of(next);
	if (!fires(r->s, r->tz, t))
		fail("%s: after %s gives %s, which does not fire", r->zone,
			 ts_text(after), ts_text(next));
	if (t - start <= (thorough ? BRUTE_FORCE_SECS : BRUTE_FORCE_SECS / 8))
	{
		pg_time_t	u = first_firing(r->s, r->tz, start, t + 1);

		if (u != t)
			fail("%s: after %s gives %s, but the first firing is %s", r->zone,
				 ts_text(after), ts_text(next), u < 0 ? "none" : ts_text(ts_of_unix(u)));
	}
	/* the same answer from anywhere in [after, next) */
	if (!next_run(r, next - 1, &again) || again != next)
		fail("%s: after %s gives %s, but after %s gives %s", r->zone,
			 ts_text(after), ts_text(next), ts_text(next - 1), ts_text(again));
	if (next - USECS_PER_SEC >= after &&
		(!next_run(r, next - USECS_PER_SEC, &again) || again != next))
		fail("%s: after %s gives %s, but after %s gives %s", r->zone,
			 ts_text(after), ts_text(next), ts_text(next - USECS_PER_SEC), ts_text(again));
	if (thorough)
	{
		TimestampTz mid = after + (next - after) / 2;

		if (!next_run(r, mid, &again) || again != next)
			fail("%s: after %s gives %s, but after %s gives %s", r->zone,
				 ts_text(after), ts_text(next), ts_text(mid), ts_text(again));
	}
}

static void
run_chain(const Run *r, TimestampTz after)
{
	for (int i = 0; i < CHAIN; i++)
	{
		TimestampTz next;
		bool		found = next_run(r, after, &next);

		if (r->s->reboot)
		{
			/* its callers compute it from the server's start */
			if (found)
				fail("@reboot has a next run after %s", ts_text(after));
			return;
		}
		if (r->s->every)
			check_every(r, after, found, next);
		else
			check_calendar(r, after, found, next, i == 0);
		if (!found)
			return;
		after = next;
	}
}

/* ----------------------------------------------------------------
 * libFuzzer entry points
 * ----------------------------------------------------------------
 */
int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_tz_selftest();

	/* every zone of the model, through cron.c's own lookup */
	for (int i = 0; i < fuzz_tz_count(); i++)
	{
		const char *name = fuzz_tz_name(i);
		pg_tz	   *tz = try_timezone(name);

		if (strcmp(name, "right/UTC") == 0)
		{
			if (tz != NULL)
				fail("time zone %s accepted", name);
			continue;
		}
		if (tz == NULL)
			fail("time zone %s refused: %s", name, fuzz_last_error.message);
		if (nzones == MAX_ZONES)
			fail("too many zones");
		zone_names[nzones] = name;
		zones[nzones++] = tz;
	}
	utc = zones[0];
	if (try_timezone("Mars/Olympus") != NULL || try_timezone("") != NULL ||
		try_timezone(NULL) != NULL)
		fail("an unknown time zone accepted");
	if (fuzz_last_error.hint == NULL)
		fail("time zone error without a hint");
	if (try_timezone("america/new_york") == NULL)
		fail("time zone names are not case-insensitive");
	{
		SchedqSchedule s;

		if (try_parse(NULL, &s))
			fail("a NULL schedule parsed");
	}
	fuzz_arena_reset();
	return 0;
}

static uint64
hash_input(const uint8_t *data, size_t size)
{
	uint64		h = UINT64CONST(1469598103934665603);

	for (size_t i = 0; i < size; i++)
		h = (h ^ data[i]) * UINT64CONST(1099511628211);
	return h ^ (h >> 29);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *text;
	char	   *saved;
	SchedqSchedule s,
				s2;
	uint64		h;

	if (size > FUZZ_MAX_INPUT)
		size = FUZZ_MAX_INPUT;
	/* exactly size + 1 bytes, so that ASan sees a read past the end */
	text = malloc(size + 1);
	saved = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	memcpy(saved, text, size + 1);
	current_input = saved;
	h = hash_input(data, size);

	if (!try_parse(text, &s))
	{
		check_parse_error();
		goto done;
	}
	if (memcmp(text, saved, size + 1) != 0)
		fail("parsing changed its input");
	if (!try_parse(text, &s2))
		fail("parses once, not twice");
	if (memcmp(&s, &s2, sizeof(s)) != 0)
		fail("parses differently twice");
	check_schedule(&s);

	{
		TimestampTz afters[MAX_AFTERS];
		int			nafters = 0;
		int			ncommon;
		int			zone_limit = nzones;

		/* a pseudo-random instant of 1965..2234, from the input */
		int64		span = (int64) 270 * 365 * SECS_PER_DAY;
		TimestampTz random_after = ts(1965, 1, 1, 0, 0, 0) +
			(int64) (h % (uint64) span) * USECS_PER_SEC +
			((h & 1) ? (int64) ((h >> 40) % USECS_PER_SEC) : 0);
		int64		last_day = s.every ? -1 : last_matching_day(&s);

		afters[nafters++] = random_after;
		afters[nafters++] = 0;
		afters[nafters++] = -1;
		afters[nafters++] = ts(1969, 12, 31, 23, 59, 59) + 500000;
		afters[nafters++] = ts(2026, 3, 8, 6, 59, 59);	/* New York's gap */
		afters[nafters++] = ts(2026, 11, 1, 5, 30, 0);	/* New York's overlap */
		ncommon = nafters;
		/* the extremes, slow, for the first two zones only */
		afters[nafters++] = MIN_TIMESTAMP;
		afters[nafters++] = END_TIMESTAMP - 1;
		afters[nafters++] = (h & 2) ? PG_INT64_MIN : PG_INT64_MAX;	/* -infinity or
																	 * infinity */

		/*
		 * A schedule that matches no day at all costs cron.c's whole step
		 * budget on every call: two zones and four `after`s do.
		 */
		if (!s.every && last_day < 0)
		{
			zone_limit = Min(nzones, 2);
			nafters = ncommon = 4;
		}
		for (int z = 0; z < zone_limit; z++)
		{
			Run			r = {&s, zones[z], zone_names[z], last_day};
			TimestampTz mine[MAX_AFTERS];
			int			n = z < 2 ? nafters : ncommon;
			pg_time_t	from = unix_of(random_after);
			long		b_off,
						a_off;
			int			b_dst,
						a_dst;
			pg_time_t	boundary;

			/* UTC and New York always, about half of the others */
			if (z >= 2 && ((h >> (16 + z)) & 1) == 0)
				continue;
			memcpy(mine, afters, n * sizeof(TimestampTz));
			/* around this zone's next transition after the random instant */
			if (pg_next_dst_boundary(&from, &b_off, &b_dst, &boundary, &a_off, &a_dst,
									 zones[z]) == 1)
			{
				TimestampTz b = ts_of_unix(boundary);

				mine[n++] = b - USECS_PER_SEC;
				mine[n++] = b - 1;
				mine[n++] = b - (int64) (h >> 48) * USECS_PER_SEC;
			}
			for (int a = 0; a < n; a++)
				run_chain(&r, mine[a]);
		}
	}

done:
	fuzz_arena_reset();
	current_input = NULL;
	free(text);
	free(saved);
	return 0;
}
