/*-------------------------------------------------------------------------
 * shared/call.h
 *	  The bracket every SQL-callable function of schedq runs its queries
 *	  in: as the owner of the schedq tables, on behalf of a caller.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_CALL_H
#define SCHEDQ_CALL_H

/*
 * One call: who called, and what to restore.  Transaction abort restores
 * the user id and the search path, so an error inside needs no cleanup.
 */
typedef struct SchedqCall
{
	Oid	 caller; /* role that called the SQL function */
	bool admin;	 /* caller may act on every task */
	Oid	 save_userid;
	int	 save_sec_context;
	int	 save_search_path; /* what schedq_search_path_push returned */
} SchedqCall;

extern void schedq_call_init(void);
extern void schedq_call_begin(SchedqCall *call);
extern void schedq_call_end(SchedqCall *call);
extern bool schedq_call_acts_for(SchedqCall *call, Oid owner);

#endif /* SCHEDQ_CALL_H */
