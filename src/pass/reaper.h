/*-------------------------------------------------------------------------
 * pass/reaper.h
 *	  The reaper pass, which the scheduler runs.  Inside a transaction,
 *	  SPI connected, as the owner of the schedq tables.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_REAPER_H
#define SCHEDQ_REAPER_H

#include "datatype/timestamp.h"

extern int schedq_reaper_pass(TimestampTz now, bool *more);

#endif /* SCHEDQ_REAPER_H */
