/*-------------------------------------------------------------------------
 * pass/promote.h
 *	  The promotion pass, which the scheduler runs.  Inside a transaction,
 *	  SPI connected, as the owner of the schedq tables.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_PROMOTE_H
#define SCHEDQ_PROMOTE_H

#include "datatype/timestamp.h"

/* Taken gate events: the lock and concurrency keys, the finished tasks. */
typedef struct SchedqGateEvents
{
	Datum keys[2];	/* text[] of lock keys, of concurrency keys */
	char  nulls[2]; /* 'n' where keys[i] is NULL (none) */
	Datum finished; /* bigint[] of finished tasks' ids */
	bool  finished_null;
} SchedqGateEvents;

extern int		   schedq_promote_pass(TimestampTz now, bool *more);
extern bool		   schedq_promote_try_lock(void);
extern int		   schedq_promote_events(TimestampTz now, bool *more);
extern bool		   schedq_promote_take_events(SchedqGateEvents *events);
extern int		   schedq_promote_judge_events(const SchedqGateEvents *events,
											   TimestampTz now, bool *more);
extern int		   schedq_promote_due(TimestampTz now, bool *more);
extern TimestampTz schedq_promote_next_due(TimestampTz now);
extern void		   schedq_promote_unpark_all(void);

#endif /* SCHEDQ_PROMOTE_H */
