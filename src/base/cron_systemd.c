/*-------------------------------------------------------------------------
 * base/cron_systemd.c
 *	  systemd calendar events (systemd.time(7)), for the schedule parser of
 *	  base/cron.c: [weekdays] [date] [time].  Pure, as cron.c.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "base/cron_field.h"
#include "base/cron_systemd.h"

/*
 * Split a systemd date or time in place at sep into two or three parts;
 * returns how many.
 */
static int
cron_split_parts(const char *text, char *field, char sep, char **parts,
				 const char *too_many, const char *too_few)
{
	int	  n = 0;
	char *p = field;

	parts[n++] = p;
	while ((p = strchr(p, sep)) != NULL)
	{
		if (n == 3)
			schedq_cron_field_error(text, too_many);
		*p++ = '\0';
		parts[n++] = p;
	}
	if (n < 2)
		schedq_cron_field_error(text, too_few);
	return n;
}

/*
 * Parse the date part of a systemd calendar event: [year-]month-day.
 */
static void
cron_parse_systemd_date(const char *text, char *date, SchedqSchedule *s)
{
	char	   *parts[3];
	int			n;
	const char *why = NULL;
	uint64		bits;
	bool		any;

	n = cron_split_parts(text, date, '-', parts,
						 "A date has at most three parts, year-month-day.",
						 "A date needs at least month-day.");
	if (n == 3)
	{
		schedq_cron_field_set_all_years(s);
		if (strcmp(parts[0], "*") != 0)
		{
			char *y = parts[0];

			memset(s->years, 0, sizeof(s->years));
			/* years, one at a time: a, a..b, lists; steps too */
			for (;;)
			{
				const char *q = y;
				int			a, b, step = 1;

				if (!schedq_cron_field_read_value(&q, NULL, 0, &a))
					schedq_cron_field_error(text,
											"Year: a value is not a number.");
				b = a;
				if (strncmp(q, "..", 2) == 0)
				{
					q += 2;
					if (!schedq_cron_field_read_value(&q, NULL, 0, &b))
						schedq_cron_field_error(text,
												"Year: a range has no end.");
				}
				if (*q == '/')
				{
					q++;
					if (!schedq_cron_field_read_value(&q, NULL, 0, &step) ||
						step <= 0)
						schedq_cron_field_error(
							text, "Year: a step must be a positive number.");
					if (b == a)
						b = CRON_YEAR_BASE + 255;
				}
				if (a < CRON_YEAR_BASE || b > CRON_YEAR_BASE + 255 || a > b)
					schedq_cron_field_error(
						text, psprintf("Year: years must be between %d and %d.",
									   CRON_YEAR_BASE, CRON_YEAR_BASE + 255));
				for (int v = a; v <= b; v += step)
					s->years[(v - CRON_YEAR_BASE) / 64] |=
						UINT64CONST(1) << ((v - CRON_YEAR_BASE) % 64);
				if (*q == ',')
				{
					y = (char *) q + 1;
					continue;
				}
				if (*q != '\0')
					schedq_cron_field_error(text,
											"Year: unexpected characters.");
				break;
			}
		}
	}
	if (!schedq_cron_field_parse(parts[n - 2], 1, 12, NULL, 0, "..", &bits,
								 &any, &why))
		schedq_cron_field_error(text, psprintf("Month: %s.", why));
	s->months = (uint32) (bits << 1);
	if (!schedq_cron_field_parse(parts[n - 1], 1, 31, NULL, 0, "..", &bits,
								 &s->mday_any, &why))
		schedq_cron_field_error(text, psprintf("Day: %s.", why));
	s->mdays = (uint32) (bits << 1);
}

/*
 * Parse the time part of a systemd calendar event: hour:minute[:second].
 */
static void
cron_parse_systemd_time(const char *text, char *time, SchedqSchedule *s)
{
	char	   *parts[3];
	int			n;
	const char *why = NULL;
	uint64		bits;
	bool		any;

	n = cron_split_parts(text, time, ':', parts,
						 "A time has at most three parts, hour:minute:second.",
						 "A time needs at least hour:minute.");
	if (!schedq_cron_field_parse(parts[0], 0, 23, NULL, 0, "..", &bits, &any,
								 &why))
		schedq_cron_field_error(text, psprintf("Hour: %s.", why));
	s->hours = (uint32) bits;
	if (!schedq_cron_field_parse(parts[1], 0, 59, NULL, 0, "..", &s->minutes,
								 &any, &why))
		schedq_cron_field_error(text, psprintf("Minute: %s.", why));
	if (n == 3)
	{
		/* systemd allows fractional seconds; schedq fires on whole ones */
		if (!schedq_cron_field_parse(parts[2], 0, 59, NULL, 0, "..",
									 &s->seconds, &any, &why))
			schedq_cron_field_error(text, psprintf("Second: %s.", why));
	}
	else
		s->seconds = 1;
}

/*
 * Parse a systemd calendar event of 1 to 3 components.
 */
void
schedq_cron_systemd_parse(const char *text, char **tokens, int n,
						  SchedqSchedule *s)
{
	bool seen_wday = false, seen_date = false, seen_time = false;

	/* defaults: every day, at midnight */
	s->seconds = 1;
	s->minutes = 1;
	s->hours = 1;
	s->mdays = 0xFFFFFFFE;
	s->mday_any = true;
	s->months = 0x1FFE;
	s->wdays = 0x7F;
	s->wday_any = true;
	s->day_or = false;
	schedq_cron_field_set_all_years(s);

	for (int i = 0; i < n; i++)
	{
		char *t = tokens[i];

		if (isalpha((unsigned char) t[0]))
		{
			const char *why = NULL;
			uint64		bits;

			if (seen_wday || seen_date || seen_time)
				schedq_cron_field_error(text, "Weekdays come first, once.");
			if (!schedq_cron_field_parse(t, 0, 6, schedq_cron_field_wday_names,
										 0, "..", &bits, &s->wday_any, &why))
				schedq_cron_field_error(text, psprintf("Weekdays: %s.", why));
			s->wdays = (uint32) bits;
			s->wday_any = false;
			seen_wday = true;
		}
		else if (strchr(t, ':') != NULL)
		{
			if (seen_time)
				schedq_cron_field_error(text, "There is more than one time.");
			cron_parse_systemd_time(text, t, s);
			seen_time = true;
		}
		else if (strchr(t, '-') != NULL)
		{
			if (seen_date || seen_time)
				schedq_cron_field_error(
					text, "The date comes before the time, once.");
			cron_parse_systemd_date(text, t, s);
			seen_date = true;
		}
		else
			schedq_cron_field_error(
				text, "A component is neither weekdays, a date nor a time.");
	}
}
