/*-------------------------------------------------------------------------
 * store/direct_int.h
 *	  What the store modules share to write schedq.task without the SQL
 *	  executor (store/direct.c): the table as described, a write's
 *	  bracket, index entries, defaults.  Private to src/store/.
 *
 * A direct write is the twin of one statement, written next to it: the
 * insert of store/task_insert.c, the claim of store/task_claim.c, the
 * complete of store/task_attempt.c.  Each opens the table with
 * schedq_direct_begin, which declines (and counts why) when the table is
 * not the one TASK_COLUMNS describes or the switch is off; the caller then
 * runs its statement.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_DIRECT_INT_H
#define SCHEDQ_DIRECT_INT_H

#include "access/htup.h"
#include "executor/tuptable.h"
#include "nodes/bitmapset.h"
#include "nodes/execnodes.h"
#include "utils/rel.h"
#include "utils/snapshot.h"

#include "base/compat.h"
#include "store/direct.h"
#include "store/task.h"

/* The claim indexes a direct claim may scan. */
typedef enum SchedqClaimIndex
{
	CLAIM_INDEX_ALL,   /* task_available_idx */
	CLAIM_INDEX_QUEUE, /* task_available_queue_idx */
	CLAIM_INDEX_SQL,   /* task_available_sql_idx */
	CLAIM_NUM_INDEXES
} SchedqClaimIndex;

/* One direct write: the table, an executor state for expressions, the
 * snapshot of the write. */
typedef struct SchedqDirectWrite
{
	Relation		rel;
	EState		   *estate;
	TupleTableSlot *slot;
	Snapshot		snapshot;
} SchedqDirectWrite;

/* The attribute numbers of TASK_COLUMNS in the table as described. */
extern AttrNumber schedq_direct_att[TASK_NUM_COLUMNS];

extern bool schedq_direct_begin(SchedqDirectWrite *dw, CmdType cmd);
extern void schedq_direct_end(SchedqDirectWrite *dw);
extern Oid	schedq_direct_primary_key(void);
extern Oid	schedq_direct_claim_index(SchedqClaimIndex which);
extern void schedq_direct_defaults(SchedqDirectWrite *dw, TupleTableSlot *slot,
								   const bool *set);
extern void schedq_direct_index_insert(SchedqDirectWrite *dw,
									   TupleTableSlot	 *slot,
									   const Bitmapset	 *changed,
									   SchedqIndexUpdate  which);
extern HeapTuple schedq_direct_update(SchedqDirectWrite *dw, HeapTuple old,
									  int n, const SchedqTaskColumn *cols,
									  const Datum *values, const bool *nulls);
extern bool		 schedq_direct_text_equals(Datum value, const char *s);
extern bool		 schedq_direct_text_in(Datum value, const Datum *elems,
									   const bool *nulls, int nelems);

#endif /* SCHEDQ_DIRECT_INT_H */
