/*-------------------------------------------------------------------------
 * pass/promote.h
 *	  The promotion pass, which the scheduler runs.  Inside a transaction,
 *	  SPI connected, as the owner of the schedq tables.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_PROMOTE_H
#define SCHEDQ_PROMOTE_H

#include "datatype/timestamp.h"

extern int		   schedq_promote_pass(TimestampTz now, bool *more);
extern bool		   schedq_promote_try_lock(void);
extern int		   schedq_promote_events(TimestampTz now, bool *more);
extern int		   schedq_promote_due(TimestampTz now, bool *more);
extern TimestampTz schedq_promote_next_due(TimestampTz now);
extern void		   schedq_promote_unpark_all(void);

#endif /* SCHEDQ_PROMOTE_H */
