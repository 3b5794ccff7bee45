/*-------------------------------------------------------------------------
 * base/cron_field.c
 *	  The pieces the schedule parsers share (base/cron.c for cron and the
 *	  macros, base/cron_systemd.c for calendar events): a value or a name,
 *	  a field of values, lists, ranges and steps, the parse error.  Pure.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "base/cron_field.h"

const char *const schedq_cron_field_wday_names[] = {
	"sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL
};
static const char *const wday_long_names[] = { "sunday",   "monday",
											   "tuesday",  "wednesday",
											   "thursday", "friday",
											   "saturday", NULL };

void
schedq_cron_field_error(const char *text, const char *detail)
{
	ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			errmsg("invalid schedule \"%s\"", text), errdetail("%s", detail));
}

/*
 * Read a number or a name at *p.  names, if given, map (case-insensitive)
 * to name_base + index.  Returns false when there is neither.
 */
bool
schedq_cron_field_read_value(const char **p, const char *const *names,
							 int name_base, int *value)
{
	const char *s = *p;

	if (isdigit((unsigned char) *s))
	{
		int v = 0;

		while (isdigit((unsigned char) *s))
		{
			if (v > 100000)
				return false;
			v = v * 10 + (*s++ - '0');
		}
		*value = v;
		*p = s;
		return true;
	}
	if (names != NULL && isalpha((unsigned char) *s))
	{
		const char *e = s;
		char		word[16];
		int			len;

		while (isalpha((unsigned char) *e))
			e++;
		len = e - s;
		if (len >= (int) sizeof(word))
			return false;
		for (int i = 0; i < len; i++)
			word[i] = tolower((unsigned char) s[i]);
		word[len] = '\0';
		for (int i = 0; names[i] != NULL; i++)
			if (strcmp(word, names[i]) == 0)
			{
				*value = name_base + i;
				*p = e;
				return true;
			}
		if (names == schedq_cron_field_wday_names)
			for (int i = 0; wday_long_names[i] != NULL; i++)
				if (strcmp(word, wday_long_names[i]) == 0)
				{
					*value = i;
					*p = e;
					return true;
				}
	}
	return false;
}

/*
 * Parse one field into a bitmap of [lo, hi] values.  range is "-" (cron)
 * or ".." (systemd).  Returns false on a syntax error, with *why set.
 */
bool
schedq_cron_field_parse(const char *field, int lo, int hi,
						const char *const *names, int name_base,
						const char *range, uint64 *bits, bool *any,
						const char **why)
{
	const char *p = field;

	*bits = 0;
	*any = false;
	if (*p == '\0')
	{
		*why = "a field is empty";
		return false;
	}
	for (;;)
	{
		int	 a, b, step = 1;
		bool star = false;

		if (*p == '*')
		{
			star = true;
			a = lo;
			b = hi;
			p++;
		}
		else
		{
			if (!schedq_cron_field_read_value(&p, names, name_base, &a))
			{
				*why = "a value is not a number or a known name";
				return false;
			}
			b = a;
			if (strncmp(p, range, strlen(range)) == 0)
			{
				p += strlen(range);
				if (!schedq_cron_field_read_value(&p, names, name_base, &b))
				{
					*why = "a range has no end";
					return false;
				}
			}
		}
		if (*p == '/')
		{
			p++;
			if (!schedq_cron_field_read_value(&p, NULL, 0, &step) ||
				step <= 0 || step > hi - lo + 1)
			{
				*why = psprintf("a step must be between 1 and %d", hi - lo + 1);
				return false;
			}
			if (!star && b == a)
				b = hi; /* n/s: from n to the end */
		}
		/* weekday 7 is Sunday, as 0 */
		if (names == schedq_cron_field_wday_names && hi == 7)
		{
			if (a > 7 || b > 7)
			{
				*why = "a weekday must be between 0 and 7";
				return false;
			}
		}
		if (a < lo || b > hi || a > hi || b < lo)
		{
			*why = psprintf("a value is out of range %d to %d", lo, hi);
			return false;
		}
		if (a > b)
		{
			*why = "a range must not end before it starts";
			return false;
		}
		if (star && step == 1)
			*any = true;
		for (int v = a; v <= b; v += step)
			*bits |= UINT64CONST(1) << (v - lo);
		if (*p == ',')
		{
			p++;
			continue;
		}
		if (*p != '\0')
		{
			*why = "unexpected characters in a field";
			return false;
		}
		return true;
	}
}

void
schedq_cron_field_set_all_years(SchedqSchedule *s)
{
	for (int i = 0; i < 4; i++)
		s->years[i] = ~UINT64CONST(0);
}
