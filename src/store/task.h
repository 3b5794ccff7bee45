/*-------------------------------------------------------------------------
 * store/task.h
 *	  What schedq knows about its task table (schedq.task): the statuses,
 *	  the SQL fragments that name sets of them, the options a task is
 *	  submitted with and their defaults, and what must happen when a task
 *	  becomes available.
 *
 * The extension script declares the same defaults in the table and in
 * the signatures of submit, submit_sql and schedule; this is their one
 * home in C.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_TASK_H
#define SCHEDQ_TASK_H

#include "access/htup.h"
#include "access/tupdesc.h"
#include "datatype/timestamp.h"
#include "utils/array.h"

/* Statuses, in the order of a task's life. */
typedef enum SchedqTaskStatus
{
	TASK_PENDING,	/* waiting for a gate: run_at, a key, a dependency */
	TASK_AVAILABLE, /* may be claimed */
	TASK_RUNNING,	/* claimed: an attempt holds a lease */
	TASK_DONE,
	TASK_FAILED,
	TASK_CANCELED,
	TASK_SKIPPED, /* a dependency failed under 'continue' */
	TASK_NUM_STATUSES
} SchedqTaskStatus;

#define TASK_STATUS_IS_LIVE(status) ((status) <= TASK_RUNNING)

extern const char *const schedq_task_status_names[TASK_NUM_STATUSES];
extern SchedqTaskStatus	 schedq_task_status(const char *name);

/*
 * Sets of statuses, as SQL.  The partial indexes of the extension script
 * are written with the same lists: keep them equal.
 */
#define TASK_LIVE_SQL	  "('pending', 'available', 'running')"
#define TASK_ACTIVE_SQL	  "('available', 'running')"
#define TASK_FINISHED_SQL "('done', 'failed', 'canceled', 'skipped')"

/* A task that no gate can hold once its run_at has come. */
#define TASK_NO_KEYS_SQL " lock_key IS NULL AND concurrency_key IS NULL "
#define TASK_UNGATED_SQL TASK_NO_KEYS_SQL " AND depends_on = '{}' "
#define TASK_GATED_SQL                                                         \
	" (lock_key IS NOT NULL OR concurrency_key IS NOT NULL"                    \
	" OR depends_on <> '{}') "

/* What complete sets: $4 is the result (store/direct_update.c writes the same). */
#define TASK_COMPLETE_SET                                                      \
	" SET status = 'done', result = $4, finished_at = now()"

/* Most tasks one call handles: claim's n, complete_many's tokens. */
#define TASK_MAX_BATCH 1000
/* Most dependencies of one task. */
#define TASK_MAX_DEPENDS 1000

/* Defaults of the options. */
#define TASK_DEFAULT_PAYLOAD	  "{}"
#define TASK_DEFAULT_QUEUE		  "default"
#define TASK_DEFAULT_PRIORITY	  0
#define TASK_DEFAULT_MAX_ATTEMPTS 5
#define TASK_DEFAULT_COST		  1

/* The capability SQL tasks require, and their kind. */
#define TASK_SQL "sql"

/* The options of a task: submit's arguments, in order. */
typedef enum SchedqTaskOption
{
	OPT_KIND,
	OPT_PAYLOAD,
	OPT_QUEUE,
	OPT_PRIORITY,
	OPT_RUN_AT,
	OPT_MAX_ATTEMPTS,
	OPT_TIMEOUT,
	OPT_LOCK_KEY,
	OPT_VERSION,
	OPT_CONCURRENCY_KEY,
	OPT_REQUIRED_CAPS,
	OPT_BUDGETS,
	OPT_COST,
	OPT_RUN_ID,
	OPT_DEPENDS_ON,
	OPT_DEDUP_KEY,
	TASK_NUM_OPTIONS
} SchedqTaskOption;

extern const char *const schedq_task_option_names[TASK_NUM_OPTIONS];
extern const Oid		 schedq_task_option_types[TASK_NUM_OPTIONS];

typedef struct SchedqTaskOptions
{
	Datum v[TASK_NUM_OPTIONS];
	bool  null[TASK_NUM_OPTIONS];
	bool  sql; /* made a SQL task by schedq_task_options_add_sql */
} SchedqTaskOptions;

extern void schedq_task_options_init(SchedqTaskOptions *opts);
extern void schedq_task_options_defaults(SchedqTaskOptions *opts);
extern void schedq_task_options_check(SchedqTaskOptions *opts);
extern void schedq_task_options_add_sql(SchedqTaskOptions *opts,
										const char		  *command);
extern bool schedq_task_options_gated(const SchedqTaskOptions *opts);
extern void schedq_task_check_budgets(Datum budgets);

/*
 * The columns a statement that makes tasks available returns, in this
 * order, for schedq_task_row_available_at_commit.
 */
#define TASK_AVAILABLE_COLUMNS " queue, required_caps, priority, run_at, id "

extern void schedq_task_available_at_commit(const char *queue,
											ArrayType  *required_caps,
											int32 priority, TimestampTz run_at,
											int64 id);
extern void schedq_task_row_available_at_commit(HeapTuple row, TupleDesc desc,
												int first_column);

extern void schedq_task_gate_event(Datum *values, const char *nulls);
extern bool schedq_task_citus_table(Oid relid);
extern bool schedq_task_distributed(void);

#endif /* SCHEDQ_TASK_H */
