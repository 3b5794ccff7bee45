/*-------------------------------------------------------------------------
 * base/check.c
 *	  Argument checks shared by the API functions (see base/check.h).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "base/check.h"
#include "base/cron.h"
#include "base/settings.h"

/*
 * An error unless the text is at most max_bytes long.
 */
void
schedq_check_text_size(const char *what, text *value, Size max_bytes)
{
	Size size = toast_raw_datum_size(PointerGetDatum(value)) - VARHDRSZ;

	if (size > max_bytes)
		ereport(ERROR, errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("%s must be at most %zu bytes", what, max_bytes),
				errdetail("It has %zu bytes.", size));
}

/*
 * An error unless the name is at most SCHEDQ_MAX_NAME_BYTES long.
 */
void
schedq_check_name(const char *what, text *value)
{
	schedq_check_text_size(what, value, SCHEDQ_MAX_NAME_BYTES);
}

/*
 * A worker's capabilities, argument `arg` of a claim or a wait, checked:
 * not NULL, and names.
 */
ArrayType *
schedq_check_caps_arg(FunctionCallInfo fcinfo, int arg)
{
	ArrayType *caps;

	if (PG_ARGISNULL(arg))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("caps must not be null"),
				errhint(
					"Pass an empty array for a worker without capabilities."));
	caps = PG_GETARG_ARRAYTYPE_P(arg);
	schedq_check_names("caps", caps, SCHEDQ_MAX_NAMES);
	return caps;
}

/*
 * How long a claim or a wait may wait, argument `arg`, checked: not NULL,
 * zero to an hour.  In microseconds.
 */
int64
schedq_check_wait_arg(FunctionCallInfo fcinfo, int arg)
{
	if (PG_ARGISNULL(arg))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("wait must not be null"));
	return schedq_check_interval("wait", PG_GETARG_INTERVAL_P(arg), true,
								 SCHEDQ_MAX_WAIT_USECS, SCHEDQ_MAX_WAIT_TEXT);
}

/*
 * An error unless the array is one-dimensional, without NULLs, has at most
 * max_names elements, and each is a name.
 */
void
schedq_check_names(const char *what, ArrayType *names, int max_names)
{
	Datum *elems;
	int	   n = ArrayGetNItems(ARR_NDIM(names), ARR_DIMS(names));

	if (ARR_NDIM(names) > 1)
		ereport(ERROR, errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				errmsg("%s must be a one-dimensional array", what));
	if (array_contains_nulls(names))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("%s must not contain nulls", what));
	if (n > max_names)
		ereport(ERROR, errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("%s must have at most %d elements", what, max_names),
				errdetail("It has %d.", n));
	deconstruct_array(names, TEXTOID, -1, false, TYPALIGN_INT, &elems, NULL,
					  &n);
	for (int i = 0; i < n; i++)
		if (VARSIZE_ANY_EXHDR(DatumGetPointer(elems[i])) >
			SCHEDQ_MAX_NAME_BYTES)
			ereport(ERROR, errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					errmsg("each element of %s must be at most %d bytes", what,
						   SCHEDQ_MAX_NAME_BYTES));
}

/*
 * An interval's length in microseconds, after checking that it is
 * positive (or zero, if zero_ok) and at most max_usecs.
 */
int64
schedq_check_interval(const char *what, Interval *value, bool zero_ok,
					  int64 max_usecs, const char *max_text)
{
	int64 usecs = schedq_cron_interval_usecs(value);

	if (usecs < 0 || (usecs == 0 && !zero_ok))
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				zero_ok ? errmsg("%s must not be negative", what) :
						  errmsg("%s must be positive", what));
	if (usecs > max_usecs)
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("%s must be at most %s", what, max_text));

	/*
	 * The length counts a month as 30 days, but "timestamp + interval"
	 * adds the months, then the days, then the time: parts of both signs
	 * can have a short length and yet leave the timestamp range ('300000
	 * years -107999900 days' is 100 days long), and a task's timeout so
	 * stored made every claim of it fail.  With no negative part, each
	 * part is within the length.
	 */
	if (value->month < 0 || value->day < 0 || value->time < 0)
		ereport(
			ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			errmsg("%s must not have a negative part", what),
			errdetail(
				"Its months, days and time are added one after the other."));
	return usecs;
}

/*
 * An error unless run_at is finite and within SCHEDQ_MAX_RUN_AT_YEARS of
 * now, so that no arithmetic on it can leave the timestamp range.
 */
void
schedq_check_run_at(TimestampTz run_at)
{
	int64		span = (int64) SCHEDQ_MAX_RUN_AT_YEARS * 365 * USECS_PER_DAY;
	TimestampTz now = GetCurrentTransactionStartTimestamp();

	if (TIMESTAMP_NOT_FINITE(run_at))
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("run_at must be finite"));
	if (run_at < now - span || run_at > now + span)
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("run_at must be within %d years of now",
					   SCHEDQ_MAX_RUN_AT_YEARS));
}

/*
 * An error unless a JSON value (a payload, a result) fits
 * schedq.max_payload.
 */
void
schedq_check_jsonb_size(const char *what, Datum value)
{
	Size size = toast_raw_datum_size(value) - VARHDRSZ;

	if (size > (Size) schedq_max_payload_bytes)
		ereport(ERROR, errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("%s of %zu bytes exceeds schedq.max_payload (%d bytes)",
					   what, size, schedq_max_payload_bytes));
}
