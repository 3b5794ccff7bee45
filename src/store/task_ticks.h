/*-------------------------------------------------------------------------
 * store/task_ticks.h
 *	  Firing periodic ticks: the tasks they submit.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_TASK_TICKS_H
#define SCHEDQ_TASK_TICKS_H

#include "datatype/timestamp.h"

/* Most ticks one statement fires. */
#define TASK_TICKS_BATCH 1000

extern int	schedq_task_ticks_fire(TimestampTz now, Datum name, int *fired,
								   int *skipped);
extern void schedq_task_ticks_fire_cluster(TimestampTz now, Datum name,
										   int *fired, int *skipped);
extern const char *schedq_task_ticks_live_last(Datum name, int64 *id);

#endif /* SCHEDQ_TASK_TICKS_H */
