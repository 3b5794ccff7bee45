/*-------------------------------------------------------------------------
 * pass/periodic.h
 *	  The periodic pass, which the scheduler runs.  Inside a transaction,
 *	  SPI connected, as the owner of the schedq tables.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_PERIODIC_H
#define SCHEDQ_PERIODIC_H

#include "datatype/timestamp.h"

extern int		   schedq_periodic_pass(TimestampTz now, bool *more);
extern TimestampTz schedq_periodic_next_due(TimestampTz now);

#endif /* SCHEDQ_PERIODIC_H */
