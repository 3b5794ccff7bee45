/*-------------------------------------------------------------------------
 * store/work_grants.h
 *	  The roles whose tasks a worker may work on without being a member of
 *	  them (schedq.work_grant).
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_WORK_GRANTS_H
#define SCHEDQ_WORK_GRANTS_H

extern const Oid *schedq_work_grants_owners(Oid caller, int *n);
extern Datum	  schedq_work_grants_array(Oid caller);
extern bool		  schedq_work_grants_add(Oid worker, Oid owner, Oid grantor);
extern bool		  schedq_work_grants_remove(Oid worker, Oid owner);

#endif /* SCHEDQ_WORK_GRANTS_H */
