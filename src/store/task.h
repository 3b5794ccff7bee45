/*-------------------------------------------------------------------------
 * store/task.h
 *	  The shape of schedq.task, in one place: its columns with their
 *	  types, the options a task is submitted with and their defaults, the
 *	  statuses and the SQL fragments that name sets of them; and what must
 *	  happen when a task becomes available.
 *
 * sql/schedq--*.sql declares the same columns (in this order), the
 * defaults again in the table and in the signatures of submit,
 * submit_sql and schedule, and the partial indexes with the status lists
 * below; CONTRIBUTING.md ("Adding a column") says what to change with a
 * column.  The direct writes (store/direct.c) compare the table with
 * TASK_COLUMNS before they write, and decline when it differs.
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

/*
 * What budget b has used now: a budget whose period has passed starts
 * empty again.
 */
#define BUDGET_USED_NOW_SQL                                                    \
	" CASE WHEN b.period_start + b.period <= now() THEN 0 ELSE b.used END"

/*
 * Task t's budgets have room for its cost (store/budgets.c charges it):
 * each exists (one deleted since the submit has none) and has room.
 */
#define TASK_BUDGET_ROOM_SQL                                                   \
	" AND (t.budgets = '{}' OR t.budgets <@ ARRAY("                            \
	"   SELECT b.name FROM schedq.budget b WHERE b.name = ANY (t.budgets)"     \
	"   AND" BUDGET_USED_NOW_SQL " + t.cost <= b.hard_limit))"

/*
 * What complete sets: $4 is the result (attempt_complete_direct writes the
 * same).  finished_at is the completing statement's start, not its
 * transaction's: a command and its complete share one (the SQL executor's);
 * but never before started_at (a claim and its complete in one statement).
 */
#define TASK_COMPLETE_SET                                                      \
	" SET status = 'done', result = $4,"                                       \
	"     finished_at = greatest(statement_timestamp(), started_at)"

/* When a task that fails or is canceled now finished: not before it started. */
#define TASK_FINISHED_NOW_SQL " greatest(now(), started_at)"

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

/*
 * The columns of schedq.task, in table order: symbol, name, type, NOT
 * NULL.  Each X-macro expansion below makes one list of them.
 */
#define TASK_COLUMNS(X)                                                        \
	X(ID, id, INT8OID, true)                                                   \
	X(QUEUE, queue, TEXTOID, true)                                             \
	X(KIND, kind, TEXTOID, true)                                               \
	X(PAYLOAD, payload, JSONBOID, true)                                        \
	X(PRIORITY, priority, INT4OID, true)                                       \
	X(STATUS, status, TEXTOID, true)                                           \
	X(RUN_AT, run_at, TIMESTAMPTZOID, true)                                    \
	X(ATTEMPTS, attempts, INT4OID, true)                                       \
	X(MAX_ATTEMPTS, max_attempts, INT4OID, true)                               \
	X(RETRY_BASE, retry_base, INT4OID, true)                                   \
	X(TIMEOUT, timeout, INTERVALOID, false)                                    \
	X(LOCK_KEY, lock_key, TEXTOID, false)                                      \
	X(VERSION, version, INT8OID, false)                                        \
	X(CONCURRENCY_KEY, concurrency_key, TEXTOID, false)                        \
	X(REQUIRED_CAPS, required_caps, TEXTARRAYOID, true)                        \
	X(BUDGETS, budgets, TEXTARRAYOID, true)                                    \
	X(COST, cost, NUMERICOID, true)                                            \
	X(RUN_ID, run_id, INT8OID, false)                                          \
	X(DEPENDS_ON, depends_on, INT8ARRAYOID, true)                              \
	X(DEDUP_KEY, dedup_key, TEXTOID, false)                                    \
	X(OWNER, owner, REGROLEOID, true)                                          \
	X(CLAIMED_BY, claimed_by, TEXTOID, false)                                  \
	X(LEASE, lease, INTERVALOID, false)                                        \
	X(LEASE_EXPIRES_AT, lease_expires_at, TIMESTAMPTZOID, false)               \
	X(DEADLINE, deadline, TIMESTAMPTZOID, false)                               \
	X(CLAIM_NONCE, claim_nonce, INT8OID, false)                                \
	X(PARKED, parked, BOOLOID, true)                                           \
	X(PARKED_ON, parked_on, TEXTOID, false)                                    \
	X(HAS_DEPENDENTS, has_dependents, BOOLOID, true)                           \
	X(PERIODIC, periodic, TEXTOID, false)                                      \
	X(RESULT, result, JSONBOID, false)                                         \
	X(LAST_ERROR, last_error, TEXTOID, false)                                  \
	X(CREATED_AT, created_at, TIMESTAMPTZOID, true)                            \
	X(STARTED_AT, started_at, TIMESTAMPTZOID, false)                           \
	X(FINISHED_AT, finished_at, TIMESTAMPTZOID, false)                         \
	X(PROGRESS, progress, FLOAT4OID, false)                                    \
	X(PROGRESS_NOTE, progress_note, TEXTOID, false)                            \
	X(PROGRESS_AT, progress_at, TIMESTAMPTZOID, false)

#define TASK_COLUMN_ENUM(sym, name, type, notnull) TASK_COL_##sym,
typedef enum SchedqTaskColumn
{
	TASK_COLUMNS(TASK_COLUMN_ENUM) TASK_NUM_COLUMNS
} SchedqTaskColumn;
#undef TASK_COLUMN_ENUM

/*
 * A version adds its columns at the end of the table; the first column
 * of each version after 1.0.  A database not yet updated lacks them (and
 * the direct writes, which never set them, do without).
 */
#define TASK_FIRST_COLUMN_1_2 TASK_COL_PROGRESS

extern const char *const schedq_task_column_names[TASK_NUM_COLUMNS];
extern const Oid		 schedq_task_column_types[TASK_NUM_COLUMNS];
extern const bool		 schedq_task_column_notnull[TASK_NUM_COLUMNS];

/*
 * The options of a task, submit's arguments in order: symbol, column,
 * SQL type (submit_many reads them as a record of these types).  The columns an INSERT of a task
 * lists are these, then status and owner (TASK_INSERT_COLUMNS).
 */
#define TASK_OPTIONS(X)                                                        \
	X(KIND, kind, "text")                                                      \
	X(PAYLOAD, payload, "jsonb")                                               \
	X(QUEUE, queue, "text")                                                    \
	X(PRIORITY, priority, "integer")                                           \
	X(RUN_AT, run_at, "timestamptz")                                           \
	X(MAX_ATTEMPTS, max_attempts, "integer")                                   \
	X(TIMEOUT, timeout, "interval")                                            \
	X(LOCK_KEY, lock_key, "text")                                              \
	X(VERSION, version, "bigint")                                              \
	X(CONCURRENCY_KEY, concurrency_key, "text")                                \
	X(REQUIRED_CAPS, required_caps, "text[]")                                  \
	X(BUDGETS, budgets, "text[]")                                              \
	X(COST, cost, "numeric")                                                   \
	X(RUN_ID, run_id, "bigint")                                                \
	X(DEPENDS_ON, depends_on, "bigint[]")                                      \
	X(DEDUP_KEY, dedup_key, "text")

#define TASK_OPTION_ENUM(sym, column, sqltype) OPT_##sym,
typedef enum SchedqTaskOption
{
	TASK_OPTIONS(TASK_OPTION_ENUM) TASK_NUM_OPTIONS
} SchedqTaskOption;
#undef TASK_OPTION_ENUM

/* "kind, payload, ..., dedup_key, ": the options' columns, as SQL. */
#define TASK_OPTION_SQL_NAME(sym, column, sqltype) #column ", "
#define TASK_OPTION_COLUMNS_SQL					   TASK_OPTIONS(TASK_OPTION_SQL_NAME)

extern const SchedqTaskColumn schedq_task_option_columns[TASK_NUM_OPTIONS];
extern const char *const	  schedq_task_option_sqltypes[TASK_NUM_OPTIONS];
extern const char *const	  schedq_task_option_names[TASK_NUM_OPTIONS];

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
extern bool schedq_task_distributed(void);
extern void schedq_task_refuse_distributed(const char *call, const char *detail,
										   const char *hint);
extern bool schedq_task_distributed_locked(void);

#endif /* SCHEDQ_TASK_H */
