/*-------------------------------------------------------------------------
 * pass/limit_floors.h
 *	  Where the promotion pass starts reading a concurrency key's parked
 *	  waiters (pass/limit_floors.c).
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_LIMIT_FLOORS_H
#define SCHEDQ_LIMIT_FLOORS_H

#include "datatype/timestamp.h"

extern void schedq_limit_floors_init(void);
extern void schedq_limit_floors_begin(void);
extern void schedq_limit_floors_args(Datum keys, bool keys_null, Datum *args,
									 char *nulls);
extern void schedq_limit_floors_found(const char *key, int32 priority,
									  TimestampTz run_at, int64 id);
extern void schedq_limit_floors_parked(const char *key, int32 priority,
									   TimestampTz run_at, int64 id);

#endif /* SCHEDQ_LIMIT_FLOORS_H */
