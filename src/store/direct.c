/*-------------------------------------------------------------------------
 * store/direct.c
 *	  Writes to schedq.task without the SQL executor: the rows of submit
 *	  and submit_many (but dedup keys) and complete of a plain task.
 *
 * These are the busiest writes of schedq, and each is one row.  Through
 * the executor, most of their cost was not the row but the statement:
 * executor start-up, opening and locking every index of the table,
 * building their IndexInfo and preparing their partial-index
 * predicates, all again for every statement.  Here the table's indexes
 * are described once per backend (their IndexInfo with predicate and
 * expressions prepared, in a cache the relcache invalidates), and a write
 * locks and inserts into only the indexes whose predicate the new row
 * version satisfies.
 *
 * The calls are the executor's own: heap_insert/heap_multi_insert and
 * heap_update (TOAST, WAL, statistics and HOT are theirs), index_insert
 * with the unique check of a unique index, and for an update a row lock
 * that follows the update chain to the latest version and checks the
 * row's conditions again there, as UPDATE does in READ COMMITTED (and
 * fails with a serialization error where UPDATE would).  Reads use a
 * snapshot taken as SPI takes one, after a command counter increment, so
 * a direct write sees and is seen by schedq's statements around it.
 *
 * Left to the statements: an update the AFTER trigger task_status_event
 * must see (a task with dependents or a run; for one that only holds
 * lock_key or concurrency_key, complete records the trigger's gate event
 * itself), an insert with a dedup_key (ON CONFLICT), and everything on a
 * table whose shape is not the one described here (another trigger, a rule, a
 * CHECK constraint, a column this library does not know, a deferrable or
 * exclusion index):
 * then the direct path declines and the caller runs its statement.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/bufmgr.h"
#include "tcop/utility.h"
#include "optimizer/optimizer.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "lib/compat.h"
#include "store/direct.h"
#include "store/task.h"

/* The columns the direct writes read or write, beyond the options. */
typedef enum DirectColumn
{
	COL_ID,
	COL_STATUS,
	COL_OWNER,
	COL_ATTEMPTS,
	COL_RETRY_BASE,
	COL_CLAIM_NONCE,
	COL_PARKED,
	COL_HAS_DEPENDENTS,
	COL_RESULT,
	COL_CREATED_AT,
	COL_FINISHED_AT,
	COL_CLAIMED_BY,
	COL_LEASE,
	COL_LEASE_EXPIRES_AT,
	COL_STARTED_AT,
	COL_DEADLINE,
	COL_NUM
} DirectColumn;

static const struct
{
	const char *name;
	Oid			type;
} direct_columns[COL_NUM] = {
	[COL_ID] = { "id", INT8OID },
	[COL_STATUS] = { "status", TEXTOID },
	[COL_OWNER] = { "owner", REGROLEOID },
	[COL_ATTEMPTS] = { "attempts", INT4OID },
	[COL_RETRY_BASE] = { "retry_base", INT4OID },
	[COL_CLAIM_NONCE] = { "claim_nonce", INT8OID },
	[COL_PARKED] = { "parked", BOOLOID },
	[COL_HAS_DEPENDENTS] = { "has_dependents", BOOLOID },
	[COL_RESULT] = { "result", JSONBOID },
	[COL_CREATED_AT] = { "created_at", TIMESTAMPTZOID },
	[COL_FINISHED_AT] = { "finished_at", TIMESTAMPTZOID },
	[COL_CLAIMED_BY] = { "claimed_by", TEXTOID },
	[COL_LEASE] = { "lease", INTERVALOID },
	[COL_LEASE_EXPIRES_AT] = { "lease_expires_at", TIMESTAMPTZOID },
	[COL_STARTED_AT] = { "started_at", TIMESTAMPTZOID },
	[COL_DEADLINE] = { "deadline", TIMESTAMPTZOID },
};

/* The columns only the statements write; NULL in a new task. */
static const char *const direct_other_columns[] = {
	"parked_on",
	"periodic",
	"last_error",
};

typedef struct DirectIndex
{
	Oid		   indexoid;
	char	  *name;
	IndexInfo *info;	/* predicate and expressions prepared */
	Bitmapset *keycols; /* columns of its key, as pull_varattnos has them */
} DirectIndex;

/*
 * What this backend knows of schedq.task; rebuilt after any relcache
 * invalidation of the table or of one of its indexes.
 */
static struct
{
	bool		 valid;
	bool		 usable; /* the shape is the one described above */
	Oid			 relid;
	Oid			 pkey;
	Oid			 sequence; /* of the id column */
	AttrNumber	 col[COL_NUM];
	AttrNumber	 opt[TASK_NUM_OPTIONS];
	int			 nindexes;
	DirectIndex *indexes;
} cache;

static MemoryContext cache_cxt = NULL;

static void
direct_invalidate(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == cache.relid)
		cache.valid = false;
	for (int i = 0; i < cache.nindexes && cache.valid; i++)
		if (cache.indexes[i].indexoid == relid)
			cache.valid = false;
}

/*
 * The number of the live column called name, if it has that type (any
 * type for InvalidOid); else InvalidAttrNumber.
 */
static AttrNumber
direct_attnum(TupleDesc desc, const char *name, Oid type)
{
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0)
			return !OidIsValid(type) || att->atttypid == type ?
					   att->attnum :
					   InvalidAttrNumber;
	}
	return InvalidAttrNumber;
}

/*
 * Is every column of the table one this file knows, and are the columns
 * an insert leaves out without default?  Then an insert that sets the
 * known columns leaves no default unapplied.
 */
static bool
direct_columns_known(TupleDesc desc)
{
	int live = 0;

	for (int i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped)
			live++;
	for (int i = 0; i < (int) lengthof(direct_other_columns); i++)
	{
		AttrNumber attnum =
			direct_attnum(desc, direct_other_columns[i], InvalidOid);
		Form_pg_attribute att;

		if (attnum == InvalidAttrNumber)
			return false;
		att = TupleDescAttr(desc, attnum - 1);
		if (att->attnotnull || att->atthasdef)
			return false;
	}
	return live == COL_NUM + TASK_NUM_OPTIONS + lengthof(direct_other_columns);
}

/*
 * Describe the table and its indexes into the cache.  The table is open
 * and locked.
 */
static void
direct_build(Relation rel)
{
	TupleDesc	  desc = RelationGetDescr(rel);
	MemoryContext old;
	List		 *indexes;
	ListCell	 *lc;
	int			  i = 0;

	if (cache_cxt == NULL)
	{
		cache_cxt =
			AllocSetContextCreate(CacheMemoryContext, "schedq direct writes",
								  ALLOCSET_SMALL_SIZES);
		CacheRegisterRelcacheCallback(direct_invalidate, (Datum) 0);
	}
	MemoryContextReset(cache_cxt);
	memset(&cache, 0, sizeof(cache));
	cache.relid = RelationGetRelid(rel);
	/* an invalidation while this runs makes the next call build again */
	cache.valid = true;

	if (rel->rd_rel->relkind != RELKIND_RELATION ||
		rel->rd_rel->relam != HEAP_TABLE_AM_OID || rel->rd_rules != NULL)
		return;
	/* another trigger (a DBA's): the trigger manager must fire it */
	if (rel->trigdesc != NULL)
		for (int t = 0; t < rel->trigdesc->numtriggers; t++)
			if (strcmp(rel->trigdesc->triggers[t].tgname,
					   "task_status_event") != 0)
				return;
	if (schedq_task_citus_table(cache.relid))
		return;
	/* a CHECK constraint (a DBA's: schedq has none) is the executor's */
	if (desc->constr != NULL && desc->constr->num_check > 0)
		return;
	for (int c = 0; c < COL_NUM; c++)
		if ((cache.col[c] = direct_attnum(desc, direct_columns[c].name,
										  direct_columns[c].type)) ==
			InvalidAttrNumber)
			return;
	for (int o = 0; o < TASK_NUM_OPTIONS; o++)
		if ((cache.opt[o] = direct_attnum(desc, schedq_task_option_names[o],
										  schedq_task_option_types[o])) ==
			InvalidAttrNumber)
			return;
	if (!direct_columns_known(desc))
		return;
	cache.sequence = schedq_identity_sequence(rel, cache.col[COL_ID]);
	cache.pkey = schedq_primary_key_index(rel);
	if (!OidIsValid(cache.sequence) || !OidIsValid(cache.pkey))
		return;

	old = MemoryContextSwitchTo(cache_cxt);
	indexes = RelationGetIndexList(rel);
	cache.indexes = palloc0(sizeof(DirectIndex) * Max(list_length(indexes), 1));
	foreach (lc, indexes)
	{
		Relation	 irel = index_open(lfirst_oid(lc), AccessShareLock);
		DirectIndex *ix = &cache.indexes[i++];
		IndexInfo	*info = BuildIndexInfo(irel);

		ix->indexoid = RelationGetRelid(irel);
		ix->name = pstrdup(RelationGetRelationName(irel));
		ix->info = info;
		cache.nindexes = i;
		/* complete's lookup scans the primary key as a B-tree on (id) */
		if (!irel->rd_index->indimmediate || info->ii_ExclusionOps != NULL ||
			(ix->indexoid == cache.pkey &&
			 (irel->rd_rel->relam != BTREE_AM_OID ||
			  info->ii_NumIndexKeyAttrs != 1 ||
			  info->ii_IndexAttrNumbers[0] != cache.col[COL_ID])))
		{
			index_close(irel, NoLock);
			MemoryContextSwitchTo(old);
			return;
		}
		if (info->ii_Predicate != NIL)
			info->ii_PredicateState =
				ExecInitQual((List *) expression_planner(
								 (Expr *) info->ii_Predicate),
							 NULL);
		if (info->ii_Expressions != NIL)
		{
			info->ii_ExpressionsState =
				ExecInitExprList((List *) expression_planner(
									 (Expr *) info->ii_Expressions),
								 NULL);
			pull_varattnos((Node *) info->ii_Expressions, 1, &ix->keycols);
		}
		for (int k = 0; k < info->ii_NumIndexAttrs; k++)
			if (info->ii_IndexAttrNumbers[k] != 0)
				ix->keycols =
					bms_add_member(ix->keycols,
								   info->ii_IndexAttrNumbers[k] -
									   FirstLowInvalidHeapAttributeNumber);
		index_close(irel, NoLock);
	}
	MemoryContextSwitchTo(old);
	cache.usable = true;
}

/* One direct write: the table, an executor state for expressions, the
 * snapshot. */
typedef struct DirectWrite
{
	Relation		rel;
	EState		   *estate;
	TupleTableSlot *slot;
	Snapshot		snapshot;
} DirectWrite;

/*
 * Open schedq.task for a direct write, the statement `command` would
 * make.  False, with nothing open, when its shape is not the one this
 * file describes.
 */
static bool
direct_begin(DirectWrite *dw, const char *command)
{
	Oid nsp = get_namespace_oid("schedq", false);
	Oid relid = get_relname_relid("task", nsp);

	if (!OidIsValid(relid))
		elog(ERROR, "schedq.task does not exist");
	/* the executor's checks of a statement that writes a table */
	PreventCommandIfReadOnly(command);
	PreventCommandIfParallelMode(command);
	dw->rel = table_open(relid, RowExclusiveLock);
	if (!cache.valid || cache.relid != relid)
		direct_build(dw->rel);
	if (!cache.usable)
	{
		table_close(dw->rel, NoLock);
		return false;
	}
	/* CheckValidResultRel's: an UPDATE a publication could not replicate */
	if (strcmp(command, "UPDATE") == 0)
		CheckCmdReplicaIdentity(dw->rel, CMD_UPDATE);
	dw->estate = CreateExecutorState();
	dw->slot = table_slot_create(dw->rel, NULL);
	/*
	 * What an index AM caches in ii_AmCache (GIN its GinState) lives for
	 * this write, as for one statement (ExecOpenIndices): not one per row.
	 */
	for (int i = 0; i < cache.nindexes; i++)
	{
		cache.indexes[i].info->ii_AmCache = NULL;
		cache.indexes[i].info->ii_Context = dw->estate->es_query_cxt;
	}
	/* what SPI does before each statement that is not read-only */
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	UpdateActiveSnapshotCommandId();
	dw->snapshot = GetActiveSnapshot();
	return true;
}

static void
direct_end(DirectWrite *dw)
{
	PopActiveSnapshot();
	ExecDropSingleTupleTableSlot(dw->slot);
	FreeExecutorState(dw->estate);
	table_close(dw->rel, NoLock);
	/* so that the statements after this write see it */
	CommandCounterIncrement();
}

/*
 * Insert index entries for the row version in slot (its tts_tid set),
 * into every index whose predicate it satisfies, as ExecInsertIndexTuples
 * does.  changed: the columns an update changed, as pull_varattnos
 * numbers them (NULL for an insert), for the index AM's hint that an
 * update left an index's key as it was.  which: the indexes heap_update
 * said need entries (all, for an insert).
 */
static void
direct_index_insert(DirectWrite *dw, TupleTableSlot *slot,
					const Bitmapset *changed, SchedqIndexUpdate which)
{
	ExprContext *econtext = GetPerTupleExprContext(dw->estate);

	econtext->ecxt_scantuple = slot;
	for (int i = 0; i < cache.nindexes; i++)
	{
		DirectIndex *ix = &cache.indexes[i];
		IndexInfo	*info = ix->info;
		Datum		 values[INDEX_MAX_KEYS];
		bool		 isnull[INDEX_MAX_KEYS];
		Relation	 irel;

		if (!info->ii_ReadyForInserts || (which == SCHEDQ_INDEXES_SUMMARIZING &&
										  !schedq_index_summarizing(info)))
			continue;
		if (info->ii_PredicateState != NULL &&
			!ExecQual(info->ii_PredicateState, econtext))
			continue;
		FormIndexDatum(info, slot, dw->estate, values, isnull);
		irel = index_open(ix->indexoid, RowExclusiveLock);
		index_insert(irel, values, isnull, &slot->tts_tid, dw->rel,
					 info->ii_Unique ? UNIQUE_CHECK_YES : UNIQUE_CHECK_NO,
					 changed != NULL && !bms_overlap(ix->keycols, changed),
					 info);
		index_close(irel, NoLock);
	}
	ResetPerTupleExprContext(dw->estate);
}

static bool
direct_text_equals(Datum value, const char *s)
{
	text *t = DatumGetTextPP(value);
	int	  len = VARSIZE_ANY_EXHDR(t);

	return len == (int) strlen(s) && memcmp(VARDATA_ANY(t), s, len) == 0;
}

/*
 * Is this row version task task_id's running attempt `attempt` with this
 * nonce?  The WHERE clause of complete's statement.
 */
static bool
direct_is_attempt(HeapTuple tuple, TupleDesc desc, int64 task_id, int32 attempt,
				  int64 nonce)
{
	bool isnull;

	return DatumGetInt64(heap_getattr(tuple, cache.col[COL_ID], desc,
									  &isnull)) == task_id &&
		   DatumGetInt32(heap_getattr(tuple, cache.col[COL_ATTEMPTS], desc,
									  &isnull)) == attempt &&
		   DatumGetInt64(heap_getattr(tuple, cache.col[COL_CLAIM_NONCE], desc,
									  &isnull)) == nonce &&
		   !isnull &&
		   direct_text_equals(heap_getattr(tuple, cache.col[COL_STATUS], desc,
										   &isnull),
							  "running");
}

/*
 * Find the version of task task_id visible to the write's snapshot, at
 * the hinted TID or through the primary key, and put its TID into tid
 * when it is the running attempt `attempt` with this nonce.  Nothing is
 * locked: a stale completion, like the statement's WHERE clause, locks
 * no row.
 */
static bool
direct_find(DirectWrite *dw, int64 task_id, int32 attempt, int64 nonce,
			ItemPointer hint, ItemPointer tid)
{
	TupleDesc	desc = RelationGetDescr(dw->rel);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	bool		found = false;

	/* a TID past the end (after a VACUUM FULL, say) is no hint */
	if (hint != NULL && ItemPointerIsValid(hint) &&
		ItemPointerGetBlockNumber(hint) < RelationGetNumberOfBlocks(dw->rel))
	{
		HeapTupleData hinted;
		Buffer		  buffer;

		hinted.t_self = *hint;
		if (heap_fetch(dw->rel, dw->snapshot, &hinted, &buffer, false))
		{
			bool isnull;
			bool same_task =
				DatumGetInt64(heap_getattr(&hinted, cache.col[COL_ID], desc,
										   &isnull)) == task_id;

			found = same_task &&
					direct_is_attempt(&hinted, desc, task_id, attempt, nonce);
			ReleaseBuffer(buffer);
			if (same_task)
			{
				*tid = *hint;
				return found;
			}
		}
	}

	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT8EQ,
				Int64GetDatum(task_id));
	scan = systable_beginscan(dw->rel, cache.pkey, true, dw->snapshot, 1, &key);
	if (HeapTupleIsValid(tuple = systable_getnext(scan)) &&
		direct_is_attempt(tuple, desc, task_id, attempt, nonce))
	{
		*tid = tuple->t_self;
		found = true;
	}
	systable_endscan(scan);
	return found;
}

/*
 * The status trigger's gate event for a task that held lock_key or
 * concurrency_key and ended (it has no dependents: those take the
 * statement).
 */
static void
direct_gate_event(HeapTuple old, TupleDesc desc)
{
	Datum values[3];
	char  nulls[3] = { ' ', ' ', 'n' };
	bool  isnull;

	values[0] = heap_getattr(old, cache.opt[OPT_LOCK_KEY], desc, &isnull);
	if (isnull)
		nulls[0] = 'n';
	values[1] =
		heap_getattr(old, cache.opt[OPT_CONCURRENCY_KEY], desc, &isnull);
	if (isnull)
		nulls[1] = 'n';
	values[2] = (Datum) 0;
	if (nulls[0] == 'n' && nulls[1] == 'n')
		return;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	schedq_task_gate_event(values, nulls);
	SPI_finish();
}

/*
 * complete() of attempt `attempt` (fenced by nonce) of a task, as the
 * statement "UPDATE schedq.task SET status = 'done', result = $4,
 * finished_at = now() WHERE id = $1 AND attempts = $2 AND claim_nonce =
 * $3 AND status = 'running'" would do it.  hint: where the claim left the
 * row, or NULL.  DIRECT_DECLINED when the statement must do it (the row
 * is then locked by this transaction, which the statement does not
 * mind).
 */
SchedqDirectOutcome
schedq_direct_complete(int64 task_id, int32 attempt, int64 nonce, Datum result,
					   bool result_null, ItemPointer hint)
{
	DirectWrite			dw;
	ItemPointerData		tid;
	TM_FailureData		tmfd;
	TupleTableSlot	   *slot;
	TupleDesc			desc;
	HeapTuple			old;
	bool				should_free;
	bool				isnull;
	SchedqDirectOutcome outcome = DIRECT_DONE;

	if (!direct_begin(&dw, "UPDATE"))
		return DIRECT_DECLINED;
	slot = dw.slot;
	desc = RelationGetDescr(dw.rel);
	if (!direct_find(&dw, task_id, attempt, nonce, hint, &tid))
	{
		direct_end(&dw);
		return DIRECT_STALE;
	}
	/* as UPDATE in READ COMMITTED: lock the latest version, check again */
	if (table_tuple_lock(dw.rel, &tid, dw.snapshot, slot,
						 GetCurrentCommandId(false), LockTupleNoKeyExclusive,
						 LockWaitBlock,
						 IsolationUsesXactSnapshot() ?
							 0 :
							 TUPLE_LOCK_FLAG_FIND_LAST_VERSION,
						 &tmfd) != TM_Ok)
	{
		if (IsolationUsesXactSnapshot())
			ereport(ERROR, errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					errmsg("could not serialize access due to concurrent "
						   "update"));
		direct_end(&dw);
		return DIRECT_STALE;
	}
	old = ExecFetchSlotHeapTuple(slot, false, &should_free);
	if (tmfd.traversed &&
		!direct_is_attempt(old, desc, task_id, attempt, nonce))
	{
		direct_end(&dw);
		return DIRECT_STALE;
	}

	/*
	 * task_status_event's WHEN clause (NEW.run_id is OLD.run_id here): a
	 * task of a run or with dependents goes to the statement and its
	 * trigger; one holding keys gets the trigger's gate event from here.
	 */
	if (!heap_attisnull(old, cache.opt[OPT_RUN_ID], desc) ||
		DatumGetBool(
			heap_getattr(old, cache.col[COL_HAS_DEPENDENTS], desc, &isnull)))
		outcome = DIRECT_DECLINED;
	else
	{
		int	  cols[3] = { cache.col[COL_STATUS], cache.col[COL_RESULT],
						  cache.col[COL_FINISHED_AT] };
		Datum values[3] = { CStringGetTextDatum("done"), result,
							TimestampTzGetDatum(
								GetCurrentTransactionStartTimestamp()) };
		bool  nulls[3] = { false, result_null, false };
		HeapTuple new =
			heap_modify_tuple_by_cols(old, desc, 3, cols, values, nulls);
		Bitmapset		 *changed = NULL;
		SchedqIndexUpdate which;

		which = schedq_heap_update(dw.rel, &old->t_self, new);
		if (which != SCHEDQ_INDEXES_NONE)
		{
			TupleTableSlot *newslot =
				MakeSingleTupleTableSlot(desc, &TTSOpsHeapTuple);

			for (int c = 0; c < 3; c++)
				changed =
					bms_add_member(changed,
								   cols[c] -
									   FirstLowInvalidHeapAttributeNumber);
			ExecStoreHeapTuple(new, newslot, false);
			direct_index_insert(&dw, newslot, changed, which);
			ExecDropSingleTupleTableSlot(newslot);
		}
		direct_gate_event(old, desc);
	}
	direct_end(&dw);
	return outcome;
}

/*
 * Insert n tasks, element i with the checked options *opts[i] and the
 * status statuses[i], owned by owner, as the statement "INSERT INTO
 * schedq.task (options..., status, owner) VALUES (...)" would; their ids,
 * drawn in order, go to ids[i].  None may have a dedup_key.  False, with
 * nothing done, when the statement must do it.
 */
bool
schedq_direct_insert(const SchedqTaskOptions *const *opts,
					 const char *const *statuses, int n, Oid owner, Datum *ids)
{
#define DIRECT_INSERT_CHUNK 1000
	DirectWrite		dw;
	TupleDesc		desc;
	TupleTableSlot *slots[DIRECT_INSERT_CHUNK];
	TimestampTz		now = GetCurrentTransactionStartTimestamp();
	CommandId		cid;

	if (n == 0)
		return true;
	if (!direct_begin(&dw, "INSERT"))
		return false;
	desc = RelationGetDescr(dw.rel);
	cid = GetCurrentCommandId(true);
	for (int i = 0; i < Min(n, DIRECT_INSERT_CHUNK); i++)
		slots[i] = i == 0 ? dw.slot : table_slot_create(dw.rel, NULL);

	for (int first = 0; first < n; first += DIRECT_INSERT_CHUNK)
	{
		int k = Min(n - first, DIRECT_INSERT_CHUNK);

		for (int i = 0; i < k; i++)
		{
			const SchedqTaskOptions *o = opts[first + i];
			TupleTableSlot			*slot = slots[i];
			int64 id = nextval_internal(cache.sequence, false);

			Assert(o->null[OPT_DEDUP_KEY]);
			ExecClearTuple(slot);
			memset(slot->tts_isnull, true, sizeof(bool) * desc->natts);
			for (int opt = 0; opt < TASK_NUM_OPTIONS; opt++)
			{
				slot->tts_values[cache.opt[opt] - 1] = o->v[opt];
				slot->tts_isnull[cache.opt[opt] - 1] = o->null[opt];
			}
#define SET(c, v)                                                              \
	(slot->tts_values[cache.col[c] - 1] = (v),                                 \
	 slot->tts_isnull[cache.col[c] - 1] = false)
			SET(COL_ID, Int64GetDatum(id));
			SET(COL_STATUS, CStringGetTextDatum(statuses[first + i]));
			SET(COL_OWNER, ObjectIdGetDatum(owner));
			SET(COL_ATTEMPTS, Int32GetDatum(0));
			SET(COL_RETRY_BASE, Int32GetDatum(0));
			SET(COL_PARKED, BoolGetDatum(false));
			SET(COL_HAS_DEPENDENTS, BoolGetDatum(false));
			SET(COL_CREATED_AT, TimestampTzGetDatum(now));
#undef SET
			for (int a = 0; a < desc->natts; a++)
				if (slot->tts_isnull[a] && TupleDescAttr(desc, a)->attnotnull)
					ereport(ERROR, errcode(ERRCODE_NOT_NULL_VIOLATION),
							errmsg("null value in column \"%s\" of relation "
								   "\"%s\" violates not-null constraint",
								   NameStr(TupleDescAttr(desc, a)->attname),
								   RelationGetRelationName(dw.rel)));
			ExecStoreVirtualTuple(slot);
			ids[first + i] = Int64GetDatum(id);
		}
		if (k == 1)
			table_tuple_insert(dw.rel, slots[0], cid, 0, NULL);
		else
			table_multi_insert(dw.rel, slots, k, cid, 0, NULL);
		for (int i = 0; i < k; i++)
			direct_index_insert(&dw, slots[i], NULL, SCHEDQ_INDEXES_ALL);
	}
	for (int i = 1; i < Min(n, DIRECT_INSERT_CHUNK); i++)
		ExecDropSingleTupleTableSlot(slots[i]);
	direct_end(&dw);
	return true;
}

/* Is text value among the elements of a text array (no NULL matches)? */
static bool
direct_text_in(Datum value, Datum *elems, bool *nulls, int nelems)
{
	text *t = DatumGetTextPP(value);
	int	  len = VARSIZE_ANY_EXHDR(t);

	for (int i = 0; i < nelems; i++)
	{
		text *e;

		if (nulls[i])
			continue;
		e = DatumGetTextPP(elems[i]);
		if (VARSIZE_ANY_EXHDR(e) == len &&
			memcmp(VARDATA_ANY(e), VARDATA_ANY(t), len) == 0)
			return true;
	}
	return false;
}

/* A claim's arrays, deconstructed once. */
typedef struct ClaimFilter
{
	Datum *queues;
	bool  *queue_nulls;
	int	   nqueues;
	Datum *caps;
	bool  *cap_nulls;
	int	   ncaps;
	Datum *busy;
	bool  *busy_nulls;
	int	   nbusy;
} ClaimFilter;

/*
 * Does the row version in slot pass the claim's WHERE clause (but the
 * floor, which the index scan applies)?  As the statement has it:
 * status = 'available', the queue (the scan key's too: this is also the
 * recheck of a later version), required_caps <@ caps, the owner, and
 * for the executors' claims kind 'sql' requiring 'sql' and not busy.
 */
static bool
direct_claimable(const SchedqDirectClaim *c, ClaimFilter *f,
				 TupleTableSlot *slot)
{
	bool	   isnull;
	Datum	   value;
	ArrayType *required;
	Datum	  *elems;
	bool	  *nulls;
	int		   nelems;

	if (!direct_text_equals(slot_getattr(slot, cache.col[COL_STATUS], &isnull),
							"available"))
		return false;
	if (c->queues != NULL &&
		!direct_text_in(slot_getattr(slot, cache.opt[OPT_QUEUE], &isnull),
						f->queues, f->queue_nulls, f->nqueues))
		return false;
	/* the scan key's queue: a later version may be in another queue */
	if (c->queue != (Datum) 0)
	{
		Datum queue = c->queue;
		bool  queue_null = false;

		if (!direct_text_in(slot_getattr(slot, cache.opt[OPT_QUEUE], &isnull),
							&queue, &queue_null, 1))
			return false;
	}
	if (c->sql_only)
	{
		int64 id =
			DatumGetInt64(slot_getattr(slot, cache.col[COL_ID], &isnull));

		if (!direct_text_equals(slot_getattr(slot, cache.opt[OPT_KIND],
											 &isnull),
								TASK_SQL))
			return false;
		for (int i = 0; i < f->nbusy; i++)
			if (!f->busy_nulls[i] && DatumGetInt64(f->busy[i]) == id)
				return false;
	}

	/* required_caps <@ caps: every element in caps, and none NULL */
	value = slot_getattr(slot, cache.opt[OPT_REQUIRED_CAPS], &isnull);
	required = DatumGetArrayTypeP(value);
	if (ArrayGetNItems(ARR_NDIM(required), ARR_DIMS(required)) > 0 ||
		c->sql_only)
	{
		Datum sql = CStringGetTextDatum(TASK_SQL);

		deconstruct_array(required, TEXTOID, -1, false, TYPALIGN_INT, &elems,
						  &nulls, &nelems);
		for (int i = 0; i < nelems; i++)
			if (nulls[i] ||
				!direct_text_in(elems[i], f->caps, f->cap_nulls, f->ncaps))
				return false;
		if (c->sql_only && !direct_text_in(sql, elems, nulls, nelems))
			return false;
	}

	if (!c->admin &&
		!has_privs_of_role(c->caller,
						   DatumGetObjectId(slot_getattr(slot,
														 cache.col[COL_OWNER],
														 &isnull))))
		return false;
	return true;
}

/*
 * direct_claimable in the per-tuple memory of the write: a scan over many
 * rows it turns down keeps nothing of them.
 */
static bool
direct_claimable_tuple(DirectWrite *dw, const SchedqDirectClaim *c,
					   ClaimFilter *f, TupleTableSlot *slot)
{
	MemoryContext old =
		MemoryContextSwitchTo(GetPerTupleMemoryContext(dw->estate));
	bool claimable = direct_claimable(c, f, slot);

	MemoryContextSwitchTo(old);
	ResetPerTupleExprContext(dw->estate);
	return claimable;
}

/*
 * Make the locked row version in slot the claim's: 'running', the next
 * attempt, the lease; as the statement's SET list has it.  Its columns go
 * to *out.
 */
static void
direct_take(DirectWrite *dw, const SchedqDirectClaim *c, TupleTableSlot *slot,
			SchedqClaimed *out)
{
#define TAKE_COLS 8
	TupleDesc desc = RelationGetDescr(dw->rel);
	bool	  isnull;
	bool	  timeout_null;
	Datum timeout = slot_getattr(slot, cache.opt[OPT_TIMEOUT], &timeout_null);
	Datum now = TimestampTzGetDatum(c->now);
	Datum by_lease = DirectFunctionCall2(timestamptz_pl_interval, now,
										 IntervalPGetDatum(c->lease));
	Datum deadline = timeout_null ? (Datum) 0 :
									DirectFunctionCall2(timestamptz_pl_interval,
														now, timeout);
	Datum expires = by_lease;
	int32 attempt =
		DatumGetInt32(slot_getattr(slot, cache.col[COL_ATTEMPTS], &isnull)) + 1;
	int cols[TAKE_COLS] = {
		cache.col[COL_STATUS],			 cache.col[COL_ATTEMPTS],
		cache.col[COL_CLAIMED_BY],		 cache.col[COL_LEASE],
		cache.col[COL_LEASE_EXPIRES_AT], cache.col[COL_STARTED_AT],
		cache.col[COL_DEADLINE],		 cache.col[COL_CLAIM_NONCE],
	};
	Datum	  values[TAKE_COLS];
	bool	  nulls[TAKE_COLS] = { false, false, false,		   false,
								   false, false, timeout_null, false };
	bool	  should_free;
	HeapTuple old;
	HeapTuple new;
	Bitmapset		 *changed = NULL;
	TupleTableSlot	 *newslot;
	SchedqIndexUpdate which;

	/* least(now + lease, now + timeout) */
	if (!timeout_null &&
		DatumGetTimestampTz(deadline) < DatumGetTimestampTz(by_lease))
		expires = deadline;
	values[0] = CStringGetTextDatum("running");
	values[1] = Int32GetDatum(attempt);
	values[2] = c->worker;
	values[3] = IntervalPGetDatum(c->lease);
	values[4] = expires;
	values[5] = now;
	values[6] = deadline;
	values[7] = Int64GetDatum(c->nonce);

	old = ExecFetchSlotHeapTuple(slot, false, &should_free);
	new = heap_modify_tuple_by_cols(old, desc, TAKE_COLS, cols, values, nulls);
	which = schedq_heap_update(dw->rel, &old->t_self, new);
	newslot = MakeSingleTupleTableSlot(desc, &TTSOpsHeapTuple);
	ExecStoreHeapTuple(new, newslot, false);
	if (which != SCHEDQ_INDEXES_NONE)
	{
		for (int i = 0; i < TAKE_COLS; i++)
			changed =
				bms_add_member(changed,
							   cols[i] - FirstLowInvalidHeapAttributeNumber);
		direct_index_insert(dw, newslot, changed, which);
	}

	/* id, attempt, queue, kind, payload, priority, run_id, lease, run_at */
	{
		const AttrNumber outcols[CLAIMED_COLUMNS] = {
			cache.col[COL_ID],		cache.col[COL_ATTEMPTS],
			cache.opt[OPT_QUEUE],	cache.opt[OPT_KIND],
			cache.opt[OPT_PAYLOAD], cache.opt[OPT_PRIORITY],
			cache.opt[OPT_RUN_ID],	cache.col[COL_LEASE_EXPIRES_AT],
			cache.opt[OPT_RUN_AT],
		};

		for (int i = 0; i < CLAIMED_COLUMNS; i++)
			out->v[i] = heap_getattr(new, outcols[i], desc, &out->isnull[i]);
	}
	out->tid = new->t_self;
	ExecDropSingleTupleTableSlot(newslot);
#undef TAKE_COLS
}

/*
 * May the claim scan irel with the keys it builds: a valid B-tree whose
 * key is ([queue,] -(priority::bigint), run_at, id)?  An invalid index (a
 * CREATE INDEX CONCURRENTLY that failed or is still building) is empty or
 * incomplete, and the planner never scans one.
 */
static bool
direct_claim_index_ok(Relation irel, bool by_queue)
{
	static const Oid key[] = { TEXTOID, INT8OID, TIMESTAMPTZOID, INT8OID };
	int				 first = by_queue ? 0 : 1;
	int				 nkeys = lengthof(key) - first;

	if (!irel->rd_index->indisvalid || irel->rd_rel->relam != BTREE_AM_OID ||
		IndexRelationGetNumberOfKeyAttributes(irel) != nkeys)
		return false;
	for (int k = 0; k < nkeys; k++)
		if (TupleDescAttr(RelationGetDescr(irel), k)->atttypid !=
			key[first + k])
			return false;
	return true;
}

/*
 * Claim up to c->n tasks as the claim statement does, without it; the
 * claimed tasks go to rows[0..].  Returns how many, or -1 when the
 * statement must do it (the table or the index is not the one described
 * here, or the index is not valid).
 */
int
schedq_direct_claim(const SchedqDirectClaim *c, SchedqClaimed *rows)
{
	DirectWrite		dw;
	DirectIndex	   *ix = NULL;
	Relation		irel;
	IndexScanDesc	scan;
	ScanKeyData		keys[2];
	ScanKeyData		floor[3];
	int				nkeys = 0;
	int				taken = 0;
	TupleTableSlot *lockslot;
	ClaimFilter		f;
	bool			xact_snapshot = IsolationUsesXactSnapshot();

	if (!direct_begin(&dw, "UPDATE"))
		return -1;
	for (int i = 0; i < cache.nindexes && ix == NULL; i++)
		if (strcmp(cache.indexes[i].name, c->index) == 0)
			ix = &cache.indexes[i];
	if (ix == NULL)
	{
		direct_end(&dw);
		return -1;
	}

	memset(&f, 0, sizeof(f));
	if (c->queues != NULL)
		deconstruct_array(c->queues, TEXTOID, -1, false, TYPALIGN_INT,
						  &f.queues, &f.queue_nulls, &f.nqueues);
	deconstruct_array(c->caps, TEXTOID, -1, false, TYPALIGN_INT, &f.caps,
					  &f.cap_nulls, &f.ncaps);
	if (c->busy != NULL)
		deconstruct_array(c->busy, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
						  &f.busy, &f.busy_nulls, &f.nbusy);

	irel = index_open(ix->indexoid, AccessShareLock);
	if (!direct_claim_index_ok(irel, c->queue != (Datum) 0))
	{
		index_close(irel, AccessShareLock);
		direct_end(&dw);
		return -1;
	}
	if (c->queue != (Datum) 0)
		ScanKeyEntryInitialize(&keys[nkeys++], 0, 1, BTEqualStrategyNumber,
							   TEXTOID, irel->rd_indcollation[0], F_TEXTEQ,
							   c->queue);
	/* (-(priority::bigint), run_at, id) >= the floor */
	ScanKeyEntryInitialize(&floor[0], SK_ROW_MEMBER, nkeys + 1,
						   BTGreaterEqualStrategyNumber, INT8OID, InvalidOid,
						   F_BTINT8CMP, Int64GetDatum(c->floor_prio));
	ScanKeyEntryInitialize(&floor[1], SK_ROW_MEMBER, nkeys + 2,
						   BTGreaterEqualStrategyNumber, TIMESTAMPTZOID,
						   InvalidOid, F_TIMESTAMP_CMP,
						   TimestampTzGetDatum(c->floor_run_at));
	ScanKeyEntryInitialize(&floor[2], SK_ROW_MEMBER | SK_ROW_END, nkeys + 3,
						   BTGreaterEqualStrategyNumber, INT8OID, InvalidOid,
						   F_BTINT8CMP, Int64GetDatum(c->floor_id));
	/* a row header has no function: as ExecIndexBuildScanKeys builds one */
	MemSet(&keys[nkeys], 0, sizeof(ScanKeyData));
	keys[nkeys].sk_flags = SK_ROW_HEADER;
	keys[nkeys].sk_attno = floor[0].sk_attno;
	keys[nkeys].sk_strategy = BTGreaterEqualStrategyNumber;
	keys[nkeys].sk_argument = PointerGetDatum(floor);
	nkeys++;

	lockslot = table_slot_create(dw.rel, NULL);
	scan = schedq_index_beginscan(dw.rel, irel, dw.snapshot, nkeys, 0);
	index_rescan(scan, keys, nkeys, NULL, 0);
	while (taken < c->n &&
		   index_getnext_slot(scan, ForwardScanDirection, dw.slot))
	{
		ItemPointerData tid = dw.slot->tts_tid;
		TM_FailureData	tmfd;
		TM_Result		res;

		CHECK_FOR_INTERRUPTS();
		if (!direct_claimable_tuple(&dw, c, &f, dw.slot))
			continue;
		res =
			table_tuple_lock(dw.rel, &tid, dw.snapshot, lockslot,
							 GetCurrentCommandId(false), LockTupleExclusive,
							 LockWaitSkip,
							 xact_snapshot ? 0 :
											 TUPLE_LOCK_FLAG_FIND_LAST_VERSION,
							 &tmfd);
		switch (res)
		{
			case TM_Ok:
				/* a newer version: its WHERE clause is checked again */
				if (tmfd.traversed &&
					!direct_claimable_tuple(&dw, c, &f, lockslot))
					continue;
				direct_take(&dw, c, lockslot, &rows[taken++]);
				break;
			case TM_WouldBlock:	  /* SKIP LOCKED */
			case TM_SelfModified: /* taken by this command already */
				break;
			case TM_Updated:
			case TM_Deleted:
				if (xact_snapshot)
					ereport(ERROR, errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
							errmsg("could not serialize access due to "
								   "concurrent update"));
				break;
			default:
				elog(ERROR, "unexpected table_tuple_lock status: %u", res);
		}
	}
	index_endscan(scan);
	index_close(irel, NoLock);
	ExecDropSingleTupleTableSlot(lockslot);
	direct_end(&dw);
	return taken;
}
