/*-------------------------------------------------------------------------
 * process/background.h
 *	  What every schedq background process shares: how it is registered,
 *	  its session settings, the transaction bracket of one iteration, and
 *	  the pace of its loop.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_BACKGROUND_H
#define SCHEDQ_BACKGROUND_H

#include "datatype/timestamp.h"
#include "postmaster/bgworker.h"

/* The lock_timeout of every schedq background process (schedq_background_settings). */
#define SCHEDQ_WORKER_LOCK_TIMEOUT_MS 1000

/* Shortest sleep of a loop whose iteration did nothing (SchedqPace). */
#define SCHEDQ_IDLE_FLOOR_MS 10

extern void schedq_background_fill(BackgroundWorker *worker,
								   const char *function, const char *type,
								   Oid dboid);
extern void schedq_background_settings(void);
extern void schedq_background_tick_begin(const char *activity);
extern void schedq_background_tick_commit(void);
extern int	schedq_background_slots_errhint(void);
extern void schedq_background_warn_no_room(void);

/*
 * The pace of a background process's loop: how long it sleeps after an
 * iteration.
 * Zero-initialise one per loop.
 */
typedef struct SchedqPace
{
	int backoff_ms; /* the last sleep of an iteration that was already
					 * late and did nothing; 0: none since progress */
} SchedqPace;

extern long schedq_background_pace_ms(SchedqPace *pace, TimestampTz wake,
									  bool progress, int max_ms);

#endif /* SCHEDQ_BACKGROUND_H */
