/*-------------------------------------------------------------------------
 * shared/citus.h
 *	  What schedq asks of Citus's catalogs, where Citus is installed.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_CITUS_H
#define SCHEDQ_CITUS_H

extern bool schedq_citus_table(Oid relid);
extern bool schedq_citus_coordinator(void);

#endif /* SCHEDQ_CITUS_H */
