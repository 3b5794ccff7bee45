/*-------------------------------------------------------------------------
 * scheduler.h
 *	  The launcher, the per-database scheduler, and the passes the
 *	  scheduler runs (promotion, reaper), which SQL can also call.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_SCHEDULER_H
#define SCHEDQ_SCHEDULER_H

#include "datatype/timestamp.h"
#include "fmgr.h"

/* How many tasks one pass handles in one batch. */
#define PROMOTE_BATCH	1000
#define REAP_BATCH		500
#define RETENTION_BATCH 1000

extern PGDLLEXPORT void schedq_launcher_main(Datum main_arg);
extern PGDLLEXPORT void schedq_scheduler_main(Datum main_arg);
extern PGDLLEXPORT void schedq_executor_main(Datum main_arg);
extern void				schedq_register_launcher(void);

/* The workers' common settings and transaction bracket (tick.c). */
extern void schedq_worker_settings(void);
extern void schedq_tick_begin(const char *activity);
extern void schedq_tick_commit(void);

/* Passes: inside a transaction, SPI connected, as a superuser. */
extern int		   schedq_promote_pass(TimestampTz now, bool *more);
extern TimestampTz schedq_next_due(TimestampTz now);
extern void		   schedq_unpark_all(void);
extern int		   schedq_reap_pass(TimestampTz now, bool *more);
extern int		   schedq_periodic_pass(TimestampTz now, bool *more);
extern int		   schedq_reap_runs(void);
extern void		   schedq_run_task_ended(Datum run_id, Datum task_id,
										 const char *status);
extern TimestampTz schedq_periodic_next_due(void);

/* Utility hook: follow CREATE/DROP EXTENSION and DROP/RENAME DATABASE. */
extern void schedq_install_utility_hook(void);

#endif /* SCHEDQ_SCHEDULER_H */
