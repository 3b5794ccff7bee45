/*-------------------------------------------------------------------------
 * store/task_gates.h
 *	  The statements of the promotion pass.  Inside a call bracket or a
 *	  scheduler's iteration (SPI connected, as the tables' owner).
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_TASK_GATES_H
#define SCHEDQ_TASK_GATES_H

#include "datatype/timestamp.h"
#include "utils/portal.h"

/* How many tasks one step of a pass handles in one batch. */
#define TASK_GATES_BATCH 1000

/*
 * The columns of a row to judge (schedq_task_gates_freed and _gated):
 * id, lock_key, concurrency_key, whether it has dependencies, run_at, the
 * concurrency key whose free slot brought it (or NULL), its lock key's
 * head and whether the key is held, its concurrency key's limit and
 * active count (or NULLs: not looked at).
 */
#define GATES_ROW_ID			  1
#define GATES_ROW_LOCK_KEY		  2
#define GATES_ROW_CONCURRENCY_KEY 3
#define GATES_ROW_HAS_DEPS		  4
#define GATES_ROW_RUN_AT		  5
#define GATES_ROW_WAITER_OF		  6
#define GATES_ROW_LOCK_HEAD		  7
#define GATES_ROW_LOCK_HELD		  8
#define GATES_ROW_LIMIT			  9
#define GATES_ROW_ACTIVE		  10

extern bool	  schedq_task_gates_take_events(Datum *keys, char *nulls,
											Datum *finished, bool *finished_null);
extern void	  schedq_task_gates_unpark_dependents(Datum finished);
extern Portal schedq_task_gates_freed(Datum *keys, const char *nulls);
extern int	  schedq_task_gates_plain(TimestampTz now, int64 **ids);
extern int	  schedq_task_gates_gated(TimestampTz now);
extern void	  schedq_task_gates_concurrency(const char *key, int32 *limit,
											int64 *active);
extern bool	  schedq_task_gates_deps_done(int64 id);
extern int	  schedq_task_gates_promote(int64 *ids, int n, TimestampTz *oldest);
extern void	  schedq_task_gates_set_aside(int64 id, const char *error);
extern void	  schedq_task_gates_park(Datum *ids, Datum *reasons, int n);
extern void	  schedq_task_gates_unpark(Datum *ids, int n);
extern TimestampTz schedq_task_gates_next_due(TimestampTz now);
extern void		   schedq_task_gates_unpark_all(void);
extern bool		   schedq_task_gates_unpark_unlocked(void);
extern int64	   schedq_task_gates_limits_version(void);

#endif /* SCHEDQ_TASK_GATES_H */
