/*-------------------------------------------------------------------------
 * shared/metrics.h
 *	  schedq's counters, in shared memory: atomics, no lock.  Each counter
 *	  is kept twice: for the whole cluster (what metrics() of schedq 1.0
 *	  shows) and for the database of the process that counts (what
 *	  metrics() of 1.1 shows).  Counters only grow; scheduler_lag_ms is a
 *	  gauge, written by whoever measured last.
 *
 * A database's counters live in one of SCHEDQ_MAX_DATABASES slots, taken
 * the first time a process of that database counts (under the metrics
 * spinlock, so a database never has two) and freed by the launcher once
 * the database leaves its scan of pg_database (made a template or not
 * connectable: a process still connected there then takes a fresh slot,
 * from 0) or is no longer in pg_database at all (dropped, whether or not
 * the launcher ever scanned it).  With every slot taken, a further
 * database is counted only in the cluster's counters.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_METRICS_H
#define SCHEDQ_METRICS_H

#include "port/atomics.h"

/*
 * Why a direct write declined (store/direct.h), one counter each,
 * direct_declined_<name>: about the table, found when it is described
 * (then true of every write until the table changes), or about one write.
 */
#define SCHEDQ_DIRECT_DECLINES(X)                                              \
	X(OFF, off)			/* schedq.direct_writes is off */                      \
	X(TABLE, table)		/* not a plain heap table, or Citus's */               \
	X(COLUMNS, columns) /* a column unknown, missing, or retyped */            \
	X(CONSTRAINT,                                                              \
	  constraint)			/* a CHECK, a NOT NULL the script has not,       \
							   * a deferrable or exclusion index */ \
	X(TRIGGER, trigger)		/* a trigger other than schedq's */                \
	X(RULE, rule)			/* a rule */                                       \
	X(INHERITED, inherited) /* tables inherit from it */                       \
	X(ROW_SECURITY, row_security) /* a policy applies to its owner */          \
	X(KEY, key)					  /* the primary key or identity is another */ \
	X(INDEX, index) /* the claim index is invalid or redefined */              \
	X(STATUS_EVENT, status_event) /* a write the status trigger must see */

#define SCHEDQ_METRIC_DECLINE(sym, name) METRIC_DIRECT_DECLINED_##sym,
typedef enum SchedqMetric
{
	METRIC_TASKS_SUBMITTED,
	METRIC_TASKS_PROMOTED,
	METRIC_TASKS_CLAIMED,
	METRIC_CLAIM_CONTENTION,
	METRIC_CLAIM_WAKEUPS,
	METRIC_TASKS_COMPLETED,
	METRIC_TASKS_FAILED,
	METRIC_TASKS_RETRIED,
	METRIC_LEASE_EXPIRATIONS,
	METRIC_TASK_TIMEOUTS,
	METRIC_PERIODIC_FIRED,
	METRIC_PERIODIC_SKIPPED_OVERLAP,
	METRIC_RUNS_FINISHED,
	METRIC_ORPHAN_RUNS_REAPED,
	METRIC_SCHEDULER_LAG_MS,
	METRIC_TASKS_SET_ASIDE,
	METRIC_READ_ONLY_MS,
	SCHEDQ_DIRECT_DECLINES(SCHEDQ_METRIC_DECLINE) SCHEDQ_NUM_METRICS
} SchedqMetric;
#undef SCHEDQ_METRIC_DECLINE

extern const char *const schedq_metrics_names[SCHEDQ_NUM_METRICS];

extern void schedq_metrics_init(void);
extern void schedq_metrics_read(bool cluster, uint64 *values);
extern void schedq_metrics_count(SchedqMetric metric, uint64 n);
extern void schedq_metrics_set(SchedqMetric metric, uint64 value);
extern void schedq_metrics_forget(Oid dboid);
extern int	schedq_metrics_databases(Oid *dboids);

#endif /* SCHEDQ_METRICS_H */
