/*-------------------------------------------------------------------------
 * shim.c
 *	  Stand-ins for the PostgreSQL backend functions src/cron.c calls, so
 *	  that it can be compiled unchanged into a libFuzzer target.
 *
 *	- palloc, palloc0, pfree, repalloc, pstrdup, psprintf: each chunk is
 *	  its own malloc (so that ASan sees overflows of every chunk), linked
 *	  into an arena that fuzz_arena_reset() frees after each input, the way
 *	  a memory context reset would.
 *	- ereport as PostgreSQL 15 expands it (errstart_cold/errstart, errcode,
 *	  errmsg, errdetail, errhint, errfinish; errmsg_internal for elog):
 *	  errfinish() longjmps to the harness for ERROR and above.
 *	- date2j: PostgreSQL's Julian day computation (datetime.c).
 *	- DirectFunctionCall3Coll and a small interval_in: "<number> <unit>"
 *	  sequences, optional "ago", a bare number meaning seconds.
 *	- pg_tzset, pg_tz_acceptable, pg_localtime, pg_next_dst_boundary: a
 *	  model of a few zones with yearly rules like POSIX TZ strings.  The
 *	  contract is PostgreSQL's (src/timezone/localtime.c): the boundary
 *	  returned is the first transition strictly after *timep, 1 when there
 *	  is one, 0 with only the "before" values set when there is none.
 *
 * pg_strcasecmp and pg_strncasecmp come from libpgport.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/int.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "pgtime.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "shim.h"

/* Use the C library's printf family: ASan checks its writes. */
#undef vsnprintf
#undef snprintf
#undef fprintf
#undef vfprintf

/* ----------------------------------------------------------------
 * Memory: an arena of individually malloc'd chunks.
 * ----------------------------------------------------------------
 */
#define CHUNK_MAGIC 0x5CEDC0DEUL

typedef struct Chunk
{
	struct Chunk *prev;
	struct Chunk *next;
	size_t		size;
	size_t		magic;
} Chunk;						/* 32 bytes: keeps MAXALIGN */

static Chunk arena = {&arena, &arena, 0, CHUNK_MAGIC};
static size_t arena_chunks = 0;

static void
chunk_link(Chunk *c)
{
	c->next = arena.next;
	c->prev = &arena;
	arena.next->prev = c;
	arena.next = c;
	arena_chunks++;
}

static void
chunk_unlink(Chunk *c)
{
	c->prev->next = c->next;
	c->next->prev = c->prev;
	arena_chunks--;
}

static Chunk *
chunk_of(void *pointer)
{
	Chunk	   *c = (Chunk *) pointer - 1;

	if (pointer == NULL || c->magic != CHUNK_MAGIC)
	{
		fprintf(stderr, "shim: pfree/repalloc of a pointer palloc did not return: %p\n", pointer);
		abort();
	}
	return c;
}

void *
palloc(Size size)
{
	Chunk	   *c;

	if (!AllocSizeIsValid(size))
		elog(ERROR, "invalid memory alloc request size %zu", size);
	c = malloc(sizeof(Chunk) + size);
	if (c == NULL)
	{
		fprintf(stderr, "shim: out of memory\n");
		abort();
	}
	c->size = size;
	c->magic = CHUNK_MAGIC;
	chunk_link(c);
	return c + 1;
}

void *
palloc0(Size size)
{
	void	   *p = palloc(size);

	memset(p, 0, size);
	return p;
}

void *
palloc_extended(Size size, int flags)
{
	void	   *p = palloc(size);

	if (flags & MCXT_ALLOC_ZERO)
		memset(p, 0, size);
	return p;
}

void
pfree(void *pointer)
{
	Chunk	   *c = chunk_of(pointer);

	chunk_unlink(c);
	c->magic = 0;
	free(c);
}

void *
repalloc(void *pointer, Size size)
{
	Chunk	   *c = chunk_of(pointer);
	Chunk	   *n;

	if (!AllocSizeIsValid(size))
		elog(ERROR, "invalid memory alloc request size %zu", size);
	chunk_unlink(c);
	n = realloc(c, sizeof(Chunk) + size);
	if (n == NULL)
	{
		fprintf(stderr, "shim: out of memory\n");
		abort();
	}
	n->size = size;
	chunk_link(n);
	return n + 1;
}

char *
pstrdup(const char *in)
{
	size_t		len = strlen(in);
	char	   *out = palloc(len + 1);

	memcpy(out, in, len + 1);
	return out;
}

char *
pnstrdup(const char *in, Size len)
{
	char	   *out;

	len = strnlen(in, len);
	out = palloc(len + 1);
	memcpy(out, in, len);
	out[len] = '\0';
	return out;
}

static char *
shim_vformat(const char *fmt, va_list args)
{
	va_list		copy;
	int			len;
	char	   *out;

	va_copy(copy, args);
	len = vsnprintf(NULL, 0, fmt, copy);
	va_end(copy);
	if (len < 0)
	{
		fprintf(stderr, "shim: bad format \"%s\"\n", fmt);
		abort();
	}
	out = palloc((Size) len + 1);
	vsnprintf(out, (size_t) len + 1, fmt, args);
	return out;
}

char *
psprintf(const char *fmt,...)
{
	va_list		args;
	char	   *out;

	va_start(args, fmt);
	out = shim_vformat(fmt, args);
	va_end(args);
	return out;
}

void
fuzz_arena_reset(void)
{
	while (arena.next != &arena)
	{
		Chunk	   *c = arena.next;

		chunk_unlink(c);
		c->magic = 0;
		free(c);
	}
}

size_t
fuzz_arena_chunks(void)
{
	return arena_chunks;
}

/* ----------------------------------------------------------------
 * ereport
 * ----------------------------------------------------------------
 */
FuzzError	fuzz_last_error;
jmp_buf    *fuzz_error_jmp = NULL;

/* The report being built, between errstart and errfinish. */
static FuzzError building;
static bool building_active = false;

bool
errstart(int elevel, const char *domain)
{
	/* Nothing below ERROR is interesting here: skip building it. */
	if (elevel < ERROR)
		return false;
	if (building_active)
	{
		fprintf(stderr, "shim: errstart while building another report\n");
		abort();
	}
	memset(&building, 0, sizeof(building));
	building.elevel = elevel;
	building.sqlerrcode = ERRCODE_INTERNAL_ERROR;
	building_active = true;
	return true;
}

bool
errstart_cold(int elevel, const char *domain)
{
	return errstart(elevel, domain);
}

static void
require_building(const char *what)
{
	if (!building_active)
	{
		fprintf(stderr, "shim: %s outside errstart/errfinish\n", what);
		abort();
	}
}

int
errcode(int sqlerrcode)
{
	require_building("errcode");
	building.sqlerrcode = sqlerrcode;
	return 0;
}

#define SHIM_ERR_FIELD(name, field) \
int \
name(const char *fmt,...) \
{ \
	va_list		args; \
 \
	require_building(#name); \
	va_start(args, fmt); \
	building.field = shim_vformat(fmt, args); \
	va_end(args); \
	return 0; \
}

SHIM_ERR_FIELD(errmsg, message)
SHIM_ERR_FIELD(errmsg_internal, message)
SHIM_ERR_FIELD(errdetail, detail)
SHIM_ERR_FIELD(errdetail_internal, detail)
SHIM_ERR_FIELD(errhint, hint)

void
errfinish(const char *filename, int lineno, const char *funcname)
{
	require_building("errfinish");
	building.filename = filename;
	building.lineno = lineno;
	building.funcname = funcname;
	building_active = false;
	fuzz_last_error = building;
	if (building.elevel < ERROR)
		return;
	if (fuzz_error_jmp == NULL)
	{
		fprintf(stderr, "shim: uncaught ERROR at %s:%d (%s): %s\n",
				filename, lineno, funcname ? funcname : "?",
				building.message ? building.message : "(no message)");
		abort();
	}
	longjmp(*fuzz_error_jmp, 1);
}

/* ----------------------------------------------------------------
 * date2j, as in PostgreSQL's src/backend/utils/adt/datetime.c
 * ----------------------------------------------------------------
 */
int
date2j(int y, int m, int d)
{
	int			julian;
	int			century;

	if (m > 2)
	{
		m += 1;
		y += 4800;
	}
	else
	{
		m += 13;
		y += 4799;
	}

	century = y / 100;
	julian = y * 365 - 32167;
	julian += y / 4 - century + century / 4;
	julian += 7834 * m / 256 + d;

	return julian;
}

/* ----------------------------------------------------------------
 * DirectFunctionCall3Coll and interval_in
 * ----------------------------------------------------------------
 */
Datum
DirectFunctionCall3Coll(PGFunction func, Oid collation, Datum arg1,
						Datum arg2, Datum arg3)
{
	LOCAL_FCINFO(fcinfo, 3);
	Datum		result;

	InitFunctionCallInfoData(*fcinfo, NULL, 3, collation, NULL, NULL);
	fcinfo->args[0].value = arg1;
	fcinfo->args[0].isnull = false;
	fcinfo->args[1].value = arg2;
	fcinfo->args[1].isnull = false;
	fcinfo->args[2].value = arg3;
	fcinfo->args[2].isnull = false;

	result = (*func) (fcinfo);

	if (fcinfo->isnull)
		elog(ERROR, "function %p returned NULL", (void *) func);
	return result;
}

typedef enum IntervalUnit
{
	IU_USEC, IU_MSEC, IU_SEC, IU_MIN, IU_HOUR, IU_DAY, IU_WEEK, IU_MONTH, IU_YEAR
} IntervalUnit;

static const struct
{
	const char *name;
	IntervalUnit unit;
}			interval_units[] =
{
	{"microsecond", IU_USEC}, {"microseconds", IU_USEC}, {"usec", IU_USEC},
	{"usecs", IU_USEC}, {"us", IU_USEC},
	{"millisecond", IU_MSEC}, {"milliseconds", IU_MSEC}, {"msec", IU_MSEC},
	{"msecs", IU_MSEC}, {"ms", IU_MSEC},
	{"second", IU_SEC}, {"seconds", IU_SEC}, {"sec", IU_SEC}, {"secs", IU_SEC},
	{"s", IU_SEC},
	{"minute", IU_MIN}, {"minutes", IU_MIN}, {"min", IU_MIN}, {"mins", IU_MIN},
	{"m", IU_MIN},
	{"hour", IU_HOUR}, {"hours", IU_HOUR}, {"hr", IU_HOUR}, {"hrs", IU_HOUR},
	{"h", IU_HOUR},
	{"day", IU_DAY}, {"days", IU_DAY}, {"d", IU_DAY},
	{"week", IU_WEEK}, {"weeks", IU_WEEK}, {"w", IU_WEEK},
	{"month", IU_MONTH}, {"months", IU_MONTH}, {"mon", IU_MONTH},
	{"mons", IU_MONTH},
	{"year", IU_YEAR}, {"years", IU_YEAR}, {"yr", IU_YEAR}, {"yrs", IU_YEAR},
	{"y", IU_YEAR},
};

pg_noreturn static void
interval_syntax_error(const char *str)
{
	ereport(ERROR,
			errcode(ERRCODE_INVALID_DATETIME_FORMAT),
			errmsg("invalid input syntax for type %s: \"%s\"", "interval", str));
}

pg_noreturn static void
interval_range_error(const char *str)
{
	ereport(ERROR,
			errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			errmsg("interval field value out of range: \"%s\"", str));
}

/* Add whole days and a fraction of a day, checking for overflow. */
static void
interval_add_days(Interval *span, double days, const char *str)
{
	double		whole = trunc(days);
	double		frac_us = rint((days - whole) * (double) USECS_PER_DAY);

	if (whole < PG_INT32_MIN || whole > PG_INT32_MAX ||
		pg_add_s32_overflow(span->day, (int32) whole, &span->day) ||
		pg_add_s64_overflow(span->time, (int64) frac_us, &span->time))
		interval_range_error(str);
}

/*
 * A small interval_in: "[@] <number> <unit> [<number> <unit> ...] [ago]",
 * numbers with an optional sign and fraction, and a last bare number taken
 * as seconds.  Anything else is an error, as PostgreSQL's would be (which
 * accepts much more: "1:30", ISO 8601, ...).
 */
Datum
interval_in(PG_FUNCTION_ARGS)
{
	const char *str = PG_GETARG_CSTRING(0);
	const char *p = str;
	Interval   *span = palloc0(sizeof(Interval));
	unsigned	seen = 0;
	bool		any = false;

	while (isspace((unsigned char) *p))
		p++;
	if (*p == '@')
		p++;
	for (;;)
	{
		bool		neg = false;
		int64		whole = 0;
		double		frac = 0,
					scale = 0.1;
		bool		digits = false;
		const char *w;
		char		word[16];
		int			len;
		int			u;
		IntervalUnit unit;
		double		value;

		while (isspace((unsigned char) *p))
			p++;
		if (*p == '\0')
			break;
		if (pg_strncasecmp(p, "ago", 3) == 0 && any &&
			(p[3] == '\0' || isspace((unsigned char) p[3])))
		{
			p += 3;
			while (isspace((unsigned char) *p))
				p++;
			if (*p != '\0')
				interval_syntax_error(str);
			if (span->time == PG_INT64_MIN || span->day == PG_INT32_MIN ||
				span->month == PG_INT32_MIN)
				interval_range_error(str);
			span->time = -span->time;
			span->day = -span->day;
			span->month = -span->month;
			break;
		}
		if (*p == '+' || *p == '-')
			neg = (*p++ == '-');
		while (isdigit((unsigned char) *p))
		{
			if (pg_mul_s64_overflow(whole, 10, &whole) ||
				pg_add_s64_overflow(whole, *p - '0', &whole))
				interval_range_error(str);
			p++;
			digits = true;
		}
		if (*p == '.')
		{
			p++;
			while (isdigit((unsigned char) *p))
			{
				frac += (*p++ - '0') * scale;
				scale /= 10;
				digits = true;
			}
		}
		if (!digits)
			interval_syntax_error(str);
		while (isspace((unsigned char) *p))
			p++;
		w = p;
		while (isalpha((unsigned char) *p))
			p++;
		len = p - w;
		if (len == 0)
		{
			/* a bare number: seconds, and only last */
			while (isspace((unsigned char) *p))
				p++;
			if (*p != '\0')
				interval_syntax_error(str);
			unit = IU_SEC;
		}
		else
		{
			if (len >= (int) sizeof(word))
				interval_syntax_error(str);
			for (int i = 0; i < len; i++)
				word[i] = pg_tolower((unsigned char) w[i]);
			word[len] = '\0';
			for (u = 0; u < (int) lengthof(interval_units); u++)
				if (strcmp(word, interval_units[u].name) == 0)
					break;
			if (u == (int) lengthof(interval_units))
				interval_syntax_error(str);
			unit = interval_units[u].unit;
		}
		if (seen & (1U << unit))
			interval_syntax_error(str);
		seen |= 1U << unit;
		any = true;

		if (neg)
		{
			whole = -whole;
			frac = -frac;
		}
		switch (unit)
		{
			case IU_USEC:
			case IU_MSEC:
			case IU_SEC:
			case IU_MIN:
			case IU_HOUR:
				{
					static const int64 mult[] = {
						1, 1000, USECS_PER_SEC, USECS_PER_MINUTE, USECS_PER_HOUR
					};
					int64		m = mult[unit - IU_USEC];
					int64		us;

					if (pg_mul_s64_overflow(whole, m, &us) ||
						pg_add_s64_overflow(us, (int64) rint(frac * m), &us) ||
						pg_add_s64_overflow(span->time, us, &span->time))
						interval_range_error(str);
					break;
				}
			case IU_DAY:
			case IU_WEEK:
				value = ((double) whole + frac) * (unit == IU_WEEK ? 7 : 1);
				interval_add_days(span, value, str);
				break;
			case IU_MONTH:
			case IU_YEAR:
				{
					double		months = ((double) whole + frac) * (unit == IU_YEAR ? 12 : 1);
					double		wm = trunc(months);

					if (wm < PG_INT32_MIN || wm > PG_INT32_MAX ||
						pg_add_s32_overflow(span->month, (int32) wm, &span->month))
						interval_range_error(str);
					if (unit == IU_MONTH)
						interval_add_days(span, (months - wm) * DAYS_PER_MONTH, str);
					else if (pg_add_s32_overflow(span->month, (int32) rint(months - wm), &span->month))
						interval_range_error(str);
					break;
				}
		}
	}
	if (!any)
		interval_syntax_error(str);
	PG_RETURN_INTERVAL_P(span);
}


/* ----------------------------------------------------------------
 * Time zones
 *
 * A zone has a standard offset and, optionally, a DST offset with two
 * yearly rules, POSIX style: the weekday `wday` of week `week` (1..4, 5 =
 * last) of month `mon`, at `secs` seconds of local time as it is before
 * the transition (may be 0 or beyond 24:00).  Transitions happen only in
 * the years first_year..last_year; before, standard time; after, the
 * offset the last one set.  Like PostgreSQL's zones with a POSIX TZ rule
 * (goahead), rules continue without end; the calendar is proleptic
 * Gregorian for all years.
 * ----------------------------------------------------------------
 */
#define SECS_DAY INT64CONST(86400)

typedef struct TzRule
{
	int			mon;
	int			week;
	int			wday;
	int			secs;
} TzRule;

struct pg_tz
{
	const char *name;
	long		std_off;
	long		dst_off;
	bool		has_dst;
	TzRule		start;			/* standard -> DST; secs in standard time */
	TzRule		end;			/* DST -> standard; secs in DST */
	int			first_year;
	int			last_year;
	bool		acceptable;
	const char *std_abbrev;
	const char *dst_abbrev;
};

#define NO_RULE {0, 0, 0, 0}
#define ALL_YEARS -1000000, 1000000

static pg_tz zones[] = {
	{"UTC", 0, 0, false, NO_RULE, NO_RULE, ALL_YEARS, true, "UTC", "UTC"},
	/* US rules since 2007: 2nd Sunday of March 02:00, 1st Sunday of Nov 02:00 */
	{"America/New_York", -5 * 3600, -4 * 3600, true,
	{3, 2, 0, 2 * 3600}, {11, 1, 0, 2 * 3600}, ALL_YEARS, true, "EST", "EDT"},
	/* EU: last Sunday of March and of October, at 01:00 UTC */
	{"Europe/Berlin", 3600, 7200, true,
	{3, 5, 0, 2 * 3600}, {10, 5, 0, 3 * 3600}, ALL_YEARS, true, "CET", "CEST"},
	/* southern hemisphere, a 30-minute shift */
	{"Australia/Lord_Howe", 10 * 3600 + 1800, 11 * 3600, true,
	{10, 1, 0, 2 * 3600}, {4, 1, 0, 2 * 3600}, ALL_YEARS, true, "+1030", "+11"},
	/* transitions at midnight: 00:00 is skipped, and 00:xx repeats */
	{"America/Havana", -5 * 3600, -4 * 3600, true,
	{3, 2, 0, 0}, {11, 1, 0, 1 * 3600}, ALL_YEARS, true, "CST", "CDT"},
	/* DST only 1995..2030 (New York's rules), standard time after */
	{"Synthetic/Abolished", -5 * 3600, -4 * 3600, true,
	{3, 2, 0, 2 * 3600}, {11, 1, 0, 2 * 3600}, 1995, 2030, true, "XST", "XDT"},
	/* a 24-hour jump each way: a whole day skipped, then one repeated */
	{"Synthetic/Day_Jump", -10 * 3600, 14 * 3600, true,
	{3, 2, 0, 2 * 3600}, {11, 1, 0, 2 * 3600}, ALL_YEARS, true, "-10", "+14"},
	{"Pacific/Kiritimati", 14 * 3600, 14 * 3600, false, NO_RULE, NO_RULE, ALL_YEARS, true, "+14", "+14"},
	/* known, but refused by pg_tz_acceptable (leap seconds) */
	{"right/UTC", 0, 0, false, NO_RULE, NO_RULE, ALL_YEARS, false, "UTC", "UTC"},
};

int
fuzz_tz_count(void)
{
	return lengthof(zones);
}

const char *
fuzz_tz_name(int i)
{
	return zones[i].name;
}

int
fuzz_tz_offsets(const pg_tz *tz, long *offsets)
{
	offsets[0] = tz->std_off;
	if (!tz->has_dst || tz->dst_off == tz->std_off)
		return 1;
	offsets[1] = tz->dst_off;
	return 2;
}

pg_tz *
pg_tzset(const char *name)
{
	if (strlen(name) > TZ_STRLEN_MAX)
		return NULL;
	for (int i = 0; i < (int) lengthof(zones); i++)
		if (pg_strcasecmp(name, zones[i].name) == 0)
			return &zones[i];
	return NULL;
}

bool
pg_tz_acceptable(pg_tz *tz)
{
	return tz->acceptable;
}

/* Days from 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static int64
days_from_civil(int64 y, int m, int d)
{
	int64		era,
				yoe,
				doy,
				doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void
civil_from_days(int64 z, int64 *y, int *m, int *d)
{
	int64		era,
				doe,
				yoe,
				doy,
				mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int) (doy - (153 * mp + 2) / 5 + 1);
	*m = (int) (mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static int64
floor_div(int64 a, int64 b)
{
	int64		q = a / b;

	if (a % b != 0 && ((a < 0) != (b < 0)))
		q--;
	return q;
}

static int
weekday_of_days(int64 days)
{
	int64		w = (days + 4) % 7;	/* 1970-01-01 was a Thursday */

	return (int) (w < 0 ? w + 7 : w);
}

static int
model_days_in_month(int64 y, int m)
{
	static const int len[] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return 29;
	return len[m];
}

static pg_time_t
rule_instant(int64 year, const TzRule *r, long offset_before)
{
	int64		first = days_from_civil(year, r->mon, 1);
	int			d = 1 + (r->wday - weekday_of_days(first) + 7) % 7;

	if (r->week == 5)
	{
		while (d + 7 <= model_days_in_month(year, r->mon))
			d += 7;
	}
	else
		d += 7 * (r->week - 1);
	return (first + d - 1) * SECS_DAY + r->secs - offset_before;
}

/* The transitions of one year, in time order, with the offsets they set. */
static int
year_transitions(const pg_tz *tz, int64 year, pg_time_t *at, long *off)
{
	pg_time_t	s,
				e;

	if (!tz->has_dst || year < tz->first_year || year > tz->last_year)
		return 0;
	s = rule_instant(year, &tz->start, tz->std_off);
	e = rule_instant(year, &tz->end, tz->dst_off);
	if (s <= e)
	{
		at[0] = s, off[0] = tz->dst_off;
		at[1] = e, off[1] = tz->std_off;
	}
	else
	{
		at[0] = e, off[0] = tz->std_off;
		at[1] = s, off[1] = tz->dst_off;
	}
	return 2;
}

static int64
utc_year(pg_time_t t)
{
	int64		y;
	int			m,
				d;

	civil_from_days(floor_div(t, SECS_DAY), &y, &m, &d);
	return y;
}

/* The offset in force at t (from the last transition at or before t). */
static long
model_offset(const pg_tz *tz, pg_time_t t)
{
	int64		year;
	pg_time_t	best = 0;
	long		off = tz->std_off;
	bool		found = false;
	pg_time_t	at[2];
	long		offs[2];

	if (!tz->has_dst)
		return tz->std_off;
	year = utc_year(t);
	for (int64 y = year - 2; y <= year + 1; y++)
	{
		int			n = year_transitions(tz, y, at, offs);

		for (int i = 0; i < n; i++)
			if (at[i] <= t && (!found || at[i] > best))
			{
				best = at[i];
				off = offs[i];
				found = true;
			}
	}
	if (!found && year - 2 > tz->last_year)
	{
		int			n = year_transitions(tz, tz->last_year, at, offs);

		return offs[n - 1];
	}
	return off;					/* before the first transition: standard */
}

int
pg_next_dst_boundary(const pg_time_t *timep, long int *before_gmtoff,
					 int *before_isdst, pg_time_t *boundary,
					 long int *after_gmtoff, int *after_isdst,
					 const pg_tz *tz)
{
	pg_time_t	t = *timep;
	int64		year,
				from,
				to;
	long		before = model_offset(tz, t);

	*before_gmtoff = before;
	*before_isdst = tz->has_dst && before == tz->dst_off;
	if (!tz->has_dst)
		return 0;
	year = utc_year(t);
	from = Max(year - 2, (int64) tz->first_year);
	to = Min(Max(year, from) + 2, (int64) tz->last_year);
	for (int64 y = from; y <= to; y++)
	{
		pg_time_t	at[2];
		long		offs[2];
		int			n = year_transitions(tz, y, at, offs);

		for (int i = 0; i < n; i++)
			if (at[i] > t)
			{
				*boundary = at[i];
				*after_gmtoff = offs[i];
				*after_isdst = offs[i] == tz->dst_off;
				return 1;
			}
	}
	return 0;
}

struct pg_tm *
pg_localtime(const pg_time_t *timep, const pg_tz *tz)
{
	static struct pg_tm tm;
	long		off = model_offset(tz, *timep);
	pg_time_t	local;
	int64		days,
				secs,
				y;
	int			m,
				d;

	if (pg_add_s64_overflow(*timep, off, &local))
		return NULL;
	days = floor_div(local, SECS_DAY);
	secs = local - days * SECS_DAY;
	civil_from_days(days, &y, &m, &d);
	if (y - 1900 < PG_INT32_MIN || y - 1900 > PG_INT32_MAX)
		return NULL;
	tm.tm_year = (int) (y - 1900);
	tm.tm_mon = m - 1;
	tm.tm_mday = d;
	tm.tm_hour = (int) (secs / 3600);
	tm.tm_min = (int) (secs / 60 % 60);
	tm.tm_sec = (int) (secs % 60);
	tm.tm_wday = weekday_of_days(days);
	tm.tm_yday = (int) (days - days_from_civil(y, 1, 1));
	tm.tm_isdst = tz->has_dst && off == tz->dst_off;
	tm.tm_gmtoff = off;
	tm.tm_zone = tm.tm_isdst ? tz->dst_abbrev : tz->std_abbrev;
	return &tm;
}

/* ----------------------------------------------------------------
 * Self-test of the zone model against known transitions (tzdata).
 * ----------------------------------------------------------------
 */
static pg_time_t
utc_instant(int y, int m, int d, int h, int mi, int s)
{
	return days_from_civil(y, m, d) * SECS_DAY + h * 3600 + mi * 60 + s;
}

static void
expect_boundary(const char *zone, pg_time_t from, pg_time_t want,
				long before, long after)
{
	pg_tz	   *tz = pg_tzset(zone);
	long		b_off,
				a_off;
	int			b_dst,
				a_dst;
	pg_time_t	got;

	if (tz == NULL ||
		pg_next_dst_boundary(&from, &b_off, &b_dst, &got, &a_off, &a_dst, tz) != 1 ||
		got != want || b_off != before || a_off != after)
	{
		fprintf(stderr, "shim selftest: %s boundary after " INT64_FORMAT " is wrong\n",
				zone, from);
		abort();
	}
	/* strictly after: asking at the boundary gives the next one */
	if (pg_next_dst_boundary(&want, &b_off, &b_dst, &got, &a_off, &a_dst, tz) == 1 &&
		got <= want)
	{
		fprintf(stderr, "shim selftest: %s boundary not strictly after\n", zone);
		abort();
	}
}

void
fuzz_tz_selftest(void)
{
	/* date2j against the model's own calendar */
	for (int64 days = -800000; days <= 800000; days += 997)
	{
		int64		y;
		int			m,
					d;

		civil_from_days(days, &y, &m, &d);
		if (date2j((int) y, m, d) - UNIX_EPOCH_JDATE != days ||
			days_from_civil(y, m, d) != days)
		{
			fprintf(stderr, "shim selftest: calendar mismatch at day " INT64_FORMAT "\n", days);
			abort();
		}
	}

	/* known transitions of 2026 (zdump) */
	expect_boundary("America/New_York", utc_instant(2026, 1, 1, 0, 0, 0),
					utc_instant(2026, 3, 8, 7, 0, 0), -5 * 3600, -4 * 3600);
	expect_boundary("America/New_York", utc_instant(2026, 3, 8, 7, 0, 0),
					utc_instant(2026, 11, 1, 6, 0, 0), -4 * 3600, -5 * 3600);
	expect_boundary("Europe/Berlin", utc_instant(2026, 1, 1, 0, 0, 0),
					utc_instant(2026, 3, 29, 1, 0, 0), 3600, 7200);
	expect_boundary("Europe/Berlin", utc_instant(2026, 3, 29, 1, 0, 0),
					utc_instant(2026, 10, 25, 1, 0, 0), 7200, 3600);
	expect_boundary("Australia/Lord_Howe", utc_instant(2026, 1, 1, 0, 0, 0),
					utc_instant(2026, 4, 4, 15, 0, 0), 11 * 3600, 10 * 3600 + 1800);
	expect_boundary("Australia/Lord_Howe", utc_instant(2026, 4, 4, 15, 0, 0),
					utc_instant(2026, 10, 3, 15, 30, 0), 10 * 3600 + 1800, 11 * 3600);
	expect_boundary("America/Havana", utc_instant(2026, 1, 1, 0, 0, 0),
					utc_instant(2026, 3, 8, 5, 0, 0), -5 * 3600, -4 * 3600);
	expect_boundary("America/Havana", utc_instant(2026, 3, 8, 5, 0, 0),
					utc_instant(2026, 11, 1, 5, 0, 0), -4 * 3600, -5 * 3600);

	/* every boundary agrees with pg_localtime on both sides */
	for (int z = 0; z < (int) lengthof(zones); z++)
	{
		pg_tz	   *tz = &zones[z];
		pg_time_t	t = utc_instant(1960, 1, 1, 0, 0, 0);
		pg_time_t	end = utc_instant(2240, 1, 1, 0, 0, 0);

		while (t < end)
		{
			long		b_off,
						a_off;
			int			b_dst,
						a_dst;
			pg_time_t	b;
			pg_time_t	before;

			if (pg_next_dst_boundary(&t, &b_off, &b_dst, &b, &a_off, &a_dst, tz) != 1)
			{
				if (pg_localtime(&t, tz)->tm_gmtoff != b_off ||
					pg_localtime(&end, tz)->tm_gmtoff != b_off)
				{
					fprintf(stderr, "shim selftest: %s: no boundary, offset changes\n", tz->name);
					abort();
				}
				break;
			}
			before = b - 1;
			if (b <= t || b_off == a_off ||
				pg_localtime(&t, tz)->tm_gmtoff != b_off ||
				pg_localtime(&before, tz)->tm_gmtoff != b_off ||
				pg_localtime(&b, tz)->tm_gmtoff != a_off)
			{
				fprintf(stderr, "shim selftest: %s: boundary " INT64_FORMAT " inconsistent\n",
						tz->name, b);
				abort();
			}
			t = b;
		}
	}
}
