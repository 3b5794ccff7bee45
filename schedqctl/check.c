/*-------------------------------------------------------------------------
 * schedqctl/check.c
 *	  Values checked before anything is sent: ids, lists, intervals,
 *	  timestamps, numbers, JSON.
 *
 *	  A value schedqctl can check is checked here, and a bad one is a
 *	  usage error (exit 2) that names the option, changes nothing and
 *	  shows nothing of the server's internals:
 *	  - ids are positive integers, lists of ids comma-separated ones;
 *	  - an interval must carry a unit ('30s', '5min', '2 hours', '1 day',
 *	    '00:05:00', 'PT5M'): PostgreSQL reads a bare number as seconds,
 *	    which is rarely what `--lease 5` meant, so a bare number is refused
 *	    with a hint;
 *	  - a timestamp must hold a date: PostgreSQL's special words (now,
 *	    today, tomorrow, yesterday, epoch, infinity, allballs) are refused,
 *	    since tomorrow is midnight in the server's time zone, rarely what
 *	    was meant;
 *	  - payloads must be JSON, checked by the parser jsonb's input uses
 *	    (text.c).
 *	  What only the server can parse (an interval's or a timestamp's
 *	  syntax, by its DateStyle and time zones) is then cast there on its
 *	  own, before the command's call, and a refusal is reported as a
 *	  usage error for that option, with the server's words.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <ctype.h>
#include <math.h>

#include "common/logging.h"
#include "schedqctl.h"

/*
 * Whether arg is a task id: a positive integer that fits a bigint.  Says
 * why not, naming what (a command or an option).
 */
bool
ctl_check_id(const char *arg, const char *what)
{
	const char *p = arg;
	uint64		v = 0;

	while (*p >= '0' && *p <= '9' && v <= PG_INT64_MAX)
		v = v * 10 + (uint64) (*p++ - '0');
	if (p == arg || *p != '\0' || v == 0 || v > PG_INT64_MAX)
	{
		pg_log_error("%s: \"%s\" is not a task id (a positive integer)", what,
					 arg);
		return false;
	}
	return true;
}

/*
 * "1,2,3" as a bigint[] literal, in a new allocation; NULL, having said
 * why, if an element is not a task id.  An empty list is the empty array.
 */
char *
ctl_check_id_list(const char *list, const char *what)
{
	PQExpBufferData array;
	char		   *copy = pg_strdup(list);
	char		   *item = copy;
	bool			more = copy[0] != '\0';

	initPQExpBuffer(&array);
	appendPQExpBufferChar(&array, '{');
	while (more)
	{
		char *comma = strchr(item, ',');

		more = comma != NULL;
		if (comma)
			*comma = '\0';
		if (!ctl_check_id(item, what))
		{
			termPQExpBuffer(&array);
			pg_free(copy);
			return NULL;
		}
		if (array.len > 1)
			appendPQExpBufferChar(&array, ',');
		appendPQExpBufferStr(&array, item);
		item = comma + 1;
	}
	appendPQExpBufferChar(&array, '}');
	ctl_text_check(&array);
	pg_free(copy);
	return array.data;
}

/*
 * Whether an interval names its unit: it holds a letter (a unit, or ISO
 * 8601's P and T) or a colon (hh:mm:ss).  Says why not, with the forms
 * that are taken.
 */
bool
ctl_check_interval_unit(const char *value, const char *option)
{
	for (const char *p = value; *p; p++)
		if (isalpha((unsigned char) *p) || *p == ':')
			return true;
	pg_log_error("%s: \"%s\" has no unit", option, value);
	pg_log_error_hint("give the unit, as PostgreSQL's intervals take it: "
					  "30s, 5min, 2h, '1 day 2 hours', 00:05:00 or PT5M "
					  "(docs/guide/cli.md#values-are-checked-first)");
	return false;
}

/*
 * Whether a timestamp holds a date and none of PostgreSQL's special words
 * (see the header).  Says why not.
 */
static bool
check_timestamp_words(const char *value, const char *option)
{
	static const char *const words[] = { "now",		  "today", "tomorrow",
										 "yesterday", "epoch", "infinity",
										 "allballs" };
	bool					 digit = false;

	for (const char *p = value; *p; p++)
		if (isdigit((unsigned char) *p))
			digit = true;
	/* Each word of letters: a special word anywhere refuses the value. */
	for (const char *p = value; *p;)
	{
		size_t n = 0;

		while (isalpha((unsigned char) p[n]))
			n++;
		for (size_t i = 0; n > 0 && i < lengthof(words); i++)
			if (strlen(words[i]) == n && pg_strncasecmp(p, words[i], n) == 0)
				digit = false;
		p += n > 0 ? n : 1;
	}
	if (!digit)
	{
		pg_log_error("%s: \"%s\" is not a date and time", option, value);
		pg_log_error_hint(
			"give a date and a time, as ISO 8601 or "
			"PostgreSQL's input takes them: 2030-01-31T09:00:00Z, "
			"'2030-01-31 09:00+01' or '2030-01-31 09:00 "
			"Europe/Berlin'; without a zone, the session's "
			"TimeZone applies: set PGTZ "
			"(docs/guide/cli.md#values-are-checked-first)");
		return false;
	}
	return true;
}

/*
 * Whether value is a finite number (--cost).  Its range is the server's
 * to check.  Says why not.
 */
bool
ctl_check_number(const char *value, const char *option)
{
	char  *end;
	double d;

	errno = 0;
	d = strtod(value, &end);
	if (end == value || *end != '\0' || errno == ERANGE || isnan(d) || isinf(d))
	{
		pg_log_error("%s: \"%s\" is not a number", option, value);
		return false;
	}
	return true;
}

/* Whether text (len bytes) is JSON; says why not, naming what. */
bool
ctl_check_json(const char *text, size_t len, const char *what)
{
	char *why = ctl_text_json_error(text, len);

	if (why == NULL)
		return true;
	pg_log_error("%s is not valid JSON: %s", what, why);
	pg_free(why);
	return false;
}

/*
 * Cast value to type (interval or timestamptz) on the server, alone, so
 * that a refusal is the option's.  Returns EXIT_OK, EXIT_USAGE after a
 * refusal of the value (said, naming the option), or the exit code of
 * another failure.  An interval must carry a unit and a timestamp a date
 * (checked first, without the server).
 */
int
ctl_check_cast(PGconn *conn, const char *value, const char *type,
			   const char *option)
{
	const char *values[1] = { value };
	PGresult   *res;
	int			rc;

	if (strcmp(type, "interval") == 0 &&
		!ctl_check_interval_unit(value, option))
		return EXIT_USAGE;
	if (strcmp(type, "timestamptz") == 0 &&
		!check_timestamp_words(value, option))
		return EXIT_USAGE;
	res = PQexecParams(conn,
					   strcmp(type, "interval") == 0 ?
						   "SELECT $1::pg_catalog.interval" :
						   "SELECT $1::pg_catalog.timestamptz",
					   1, NULL, values, NULL, NULL, 0);
	if (PQresultStatus(res) == PGRES_TUPLES_OK)
		rc = EXIT_OK;
	else if (ctl_conn_refusal_is_value(res))
	{
		char *msg = ctl_conn_message(conn, res);

		pg_log_error("%s: \"%s\": %s", option, value, msg);
		pg_free(msg);
		rc = EXIT_USAGE;
	}
	else
		rc = ctl_conn_check(conn, res, NULL, option);
	PQclear(res);
	return rc;
}
