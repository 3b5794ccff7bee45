/*-------------------------------------------------------------------------
 * schedq.h
 *	  Declarations shared by the schedq sources: GUC variables, task
 *	  statuses, and the entry points each file offers the others.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_H
#define SCHEDQ_H

#include "compat.h"

#include "datatype/timestamp.h"

/* GUC variables (schedq.c); each name ends in its unit. */
extern bool schedq_enabled;
extern int	schedq_promote_interval_ms;
extern int	schedq_reaper_interval_ms;
extern int	schedq_default_lease_s;
extern int	schedq_sql_workers;
extern int	schedq_retention_s;
extern int	schedq_max_payload_bytes;
extern int	schedq_claim_floor_interval_ms;

/* Largest n a single claim may ask for. */
#define SCHEDQ_MAX_CLAIM_BATCH 1000

/*
 * The bracket every SQL-callable function uses around its queries: it
 * remembers the calling role, then runs the queries as the owner of the
 * schedq tables (SECURITY_LOCAL_USERID_CHANGE, as ri_triggers.c does), so
 * that no role needs privileges on the tables themselves.  Transaction
 * abort restores the user id, so an error inside needs no cleanup.
 */
typedef struct SchedqCall
{
	Oid	 caller; /* role that called the SQL function */
	bool admin;	 /* caller may act on every task */
	Oid	 save_userid;
	int	 save_sec_context;
} SchedqCall;

extern void schedq_install_planner_hook(void);
extern void schedq_call_begin(SchedqCall *call);
extern void schedq_call_end(SchedqCall *call);
extern bool schedq_caller_acts_for(SchedqCall *call, Oid owner);

/* Kept SPI plans, prepared once per backend (spi.c). */
typedef struct _SPI_plan *SPIPlanPtr;
extern SPIPlanPtr schedq_plan(SPIPlanPtr *cache, const char *sql, int nargs,
							  const Oid *argtypes);
extern int schedq_execute(SPIPlanPtr plan, Datum *values, const char *nulls,
						  long count, int expected);

/* Grants (auth.c). */
extern char *schedq_grant_sign(int64 task_id, int32 attempt,
							   TimestampTz lease_expires);

typedef enum SchedqGrantCheck
{
	GRANT_OK,
	GRANT_MALFORMED,
	GRANT_BAD_SIGNATURE
} SchedqGrantCheck;

typedef struct SchedqGrant
{
	int64		task_id;
	int32		attempt;
	TimestampTz lease_expires;
} SchedqGrant;

extern SchedqGrantCheck schedq_grant_parse(const char  *token,
										   SchedqGrant *grant);
extern void schedq_grant_require(const char *token, SchedqGrant *grant);

/* Failing an attempt (work.c), for fail() and the reaper. */
extern const char *schedq_fail_attempt(int64 task_id, int32 attempt,
									   const char *error, int64 retry_us,
									   bool permanent);

/* Task options shared with periodic schedules (submit.c). */
extern void	 schedq_check_task_options(Datum kind, Datum payload, Datum queue,
									   Datum priority, Datum max_attempts,
									   Datum timeout, Datum lock_key,
									   Datum concurrency_key,
									   Datum required_caps, Datum budgets,
									   Datum cost);
extern Datum schedq_sql_payload(const char *command);

/* Shared helpers for the API files. */
extern void	 schedq_require_preloaded(void);
extern int64 schedq_interval_usecs(const Interval *span);

#endif /* SCHEDQ_H */
