/*-------------------------------------------------------------------------
 * base/check.h
 *	  Checks of argument values that every API function shares, with
 *	  schedq's documented limits.
 *
 * Every text a caller passes ends up in an index, a log line or a shared
 * memory hash, so each is bounded: a value over a limit is refused with
 * 54000 (program_limit_exceeded), a value out of its range with 22023
 * (invalid_parameter_value), before anything is written.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_CHECK_H
#define SCHEDQ_CHECK_H

#include "datatype/timestamp.h"
#include "fmgr.h"
#include "utils/array.h"

/* Names: queues, kinds, keys, capabilities, budgets, workers, schedules. */
#define SCHEDQ_MAX_NAME_BYTES 255
/* Elements of an array of names (required_caps, budgets, caps). */
#define SCHEDQ_MAX_NAMES 64
/* Queues one claim may name. */
#define SCHEDQ_MAX_QUEUES 1000
/* A schedule: a cron expression, a macro, a calendar event. */
#define SCHEDQ_MAX_SCHEDULE_BYTES 1000
/* An error a worker reports. */
#define SCHEDQ_MAX_ERROR_BYTES 65536
/* Longest note of schedq.progress. */
#define SCHEDQ_MAX_NOTE_BYTES 1000
/* A lease, a timeout, a retry delay, a heartbeat's extension, a period. */
#define SCHEDQ_MAX_INTERVAL_USECS ((int64) 365 * USECS_PER_DAY)
#define SCHEDQ_MAX_INTERVAL_TEXT  "365 days"
/* How long one claim may wait. */
#define SCHEDQ_MAX_WAIT_USECS ((int64) 3600 * USECS_PER_SEC)
#define SCHEDQ_MAX_WAIT_TEXT  "1 hour"
/* How far from now a run_at may be. */
#define SCHEDQ_MAX_RUN_AT_YEARS 1000

extern void		  schedq_check_name(const char *what, text *value);
extern void		  schedq_check_text_size(const char *what, text *value,
										 Size max_bytes);
extern ArrayType *schedq_check_caps_arg(FunctionCallInfo fcinfo, int arg);
extern int64	  schedq_check_wait_arg(FunctionCallInfo fcinfo, int arg);
extern void		  schedq_check_names(const char *what, ArrayType *names,
									 int max_names);
extern int64	  schedq_check_interval(const char *what, Interval *value,
										bool zero_ok, int64 max_usecs,
										const char *max_text);
extern void		  schedq_check_run_at(TimestampTz run_at);
extern void		  schedq_check_jsonb_size(const char *what, Datum value);

#endif /* SCHEDQ_CHECK_H */
