/*-------------------------------------------------------------------------
 * store/direct.c
 *	  What every write to schedq.task without the SQL executor shares:
 *	  the table described once per backend, the write's bracket, index
 *	  entries, defaults, and the decline contract.
 *
 * The busiest writes of schedq (plain submits, claims, completes) are one
 * row each.  Through PostgreSQL's executor, most of their cost was not the row but
 * the statement: executor start-up, opening and locking every index of
 * the table, building their IndexInfo and preparing their partial-index
 * predicates, all again for every statement.  Here the table is described
 * once per backend (its columns against TASK_COLUMNS, its indexes with
 * IndexInfo, predicate and expressions prepared, its column defaults as
 * prepared expressions, in a cache the relcache invalidates), and a write
 * inserts into only the indexes whose predicate its row version
 * satisfies.  The calls are PostgreSQL's executor's own (execReplication.c is the
 * model): heap_insert/heap_multi_insert and heap_update (TOAST, WAL,
 * statistics and HOT are theirs), index_insert with the unique check of a
 * unique index.
 *
 * The twins themselves live next to their statements: the insert in
 * store/task_insert.c, the claim in store/task_claim.c, the complete in
 * store/task_attempt.c.  Each opens the table with schedq_direct_begin,
 * which declines when the write is not for this path -- the table is not
 * the one TASK_COLUMNS and the extension script describe (another
 * trigger, a rule, a CHECK or NOT NULL constraint the script does not
 * have, an unknown or retyped column, tables inheriting from it, a
 * policy that applies to its owner, another primary key, Citus's), or
 * schedq.direct_writes is off.  Then the caller runs its statement, which
 * fires the trigger, checks the constraint and applies the policy.  Every
 * decline is counted per reason in metrics() (direct_declined_<reason>)
 * and the first of each reason in a backend is logged at DEBUG1.
 *
 * What a statement would do besides, a direct write does too: the
 * columns an INSERT leaves out get the table's defaults, whatever they
 * are now (schedq_direct_defaults); a NOT NULL column that would be NULL
 * raises PostgreSQL's executor's error; reads use a snapshot taken as SPI takes
 * one, after a command counter increment, so a direct write sees and is
 * seen by schedq's statements around it.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "rewrite/rewriteHandler.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "base/compat.h"
#include "base/settings.h"
#include "shared/citus.h"
#include "shared/metrics.h"
#include "store/direct.h"
#include "store/direct_int.h"
#include "store/task.h"

/* The only trigger of schedq.task the direct writes know (its own). */
#define DIRECT_STATUS_TRIGGER "task_status_event"

/* The claim indexes, by name, and whether each is of SQL tasks only. */
static const char *const claim_index_names[CLAIM_NUM_INDEXES] = {
	[CLAIM_INDEX_ALL] = "task_available_idx",
	[CLAIM_INDEX_QUEUE] = "task_available_queue_idx",
	[CLAIM_INDEX_SQL] = "task_available_sql_idx",
};

typedef struct DirectIndex
{
	Oid		   indexoid;
	IndexInfo *info;	/* predicate and expressions prepared */
	Bitmapset *keycols; /* columns of its key, as pull_varattnos has them */
} DirectIndex;

/*
 * What this backend knows of schedq.task; built again after any relcache
 * invalidation of the table or of one of its indexes.
 */
static struct
{
	bool		 valid;
	int			 decline; /* a SchedqDirectDecline, or -1: usable */
	Oid			 relid;
	Oid			 pkey;
	Oid			 claim_index[CLAIM_NUM_INDEXES]; /* InvalidOid: not usable */
	ExprState	*defaults[TASK_NUM_COLUMNS];	 /* NULL: none (NULL) */
	int			 nindexes;
	DirectIndex *indexes;
} cache;

AttrNumber schedq_direct_att[TASK_NUM_COLUMNS];

static MemoryContext cache_cxt = NULL;

/* The reasons this backend has logged already. */
static bool declined_logged[DIRECT_NUM_DECLINES];

#define DIRECT_DECLINE_NAME(sym, name) [DIRECT_DECLINE_##sym] = #name,
static const char *const decline_names[DIRECT_NUM_DECLINES] = {
	SCHEDQ_DIRECT_DECLINES(DIRECT_DECLINE_NAME)
};

/*
 * A write declined for this reason: count it, and log the first of each
 * reason in this backend at DEBUG1.
 */
void
schedq_direct_declined(SchedqDirectDecline why)
{
	schedq_metrics_count(METRIC_DIRECT_DECLINED_OFF + why, 1);
	if (!declined_logged[why])
	{
		declined_logged[why] = true;
		ereport(DEBUG1,
				errmsg_internal("schedq: a write to schedq.task took the "
								"statement: direct write declined (%s)",
								decline_names[why]));
	}
}

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
 * Is this expression -(priority::bigint), as the claim indexes have it?
 */
static bool
direct_is_claim_key(Node *node)
{
	OpExpr	 *minus;
	FuncExpr *cast;
	Var		 *var;

	if (!IsA(node, OpExpr))
		return false;
	minus = (OpExpr *) node;
	if (minus->opfuncid != F_INT8UM || list_length(minus->args) != 1 ||
		!IsA(linitial(minus->args), FuncExpr))
		return false;
	cast = linitial(minus->args);
	if (cast->funcid != F_INT8_INT4 || list_length(cast->args) != 1 ||
		!IsA(linitial(cast->args), Var))
		return false;
	var = linitial(cast->args);
	return var->varattno == schedq_direct_att[TASK_COL_PRIORITY];
}

/*
 * Is this clause "column = 'value'" on a text column?
 */
static bool
direct_is_text_eq(Node *node, SchedqTaskColumn column, const char *value)
{
	OpExpr *eq;
	Var	   *var;
	Const  *c;

	if (!IsA(node, OpExpr))
		return false;
	eq = (OpExpr *) node;
	if (eq->opfuncid != F_TEXTEQ || list_length(eq->args) != 2 ||
		!IsA(linitial(eq->args), Var) || !IsA(lsecond(eq->args), Const))
		return false;
	var = linitial(eq->args);
	c = lsecond(eq->args);
	return var->varattno == schedq_direct_att[column] && !c->constisnull &&
		   schedq_direct_text_equals(c->constvalue, value);
}

/*
 * Is this index the claim index `which` as the extension script defines
 * it: a valid B-tree on ([queue,] -(priority::bigint), run_at, id) with
 * the predicate status = 'available' (and kind = 'sql' for SQL tasks)?
 * A direct claim scans it with keys of that shape and takes every row it
 * returns as available; an index redefined by hand, or still being built,
 * is left to the statement (and the planner).
 */
static bool
direct_claim_index_ok(Relation irel, SchedqClaimIndex which)
{
	IndexInfo *info = BuildIndexInfo(irel);
	int		   first = which == CLAIM_INDEX_QUEUE ? 1 : 0;
	List	  *pred = info->ii_Predicate;
	bool	   ok;

	if (!irel->rd_index->indisvalid || irel->rd_rel->relam != BTREE_AM_OID ||
		info->ii_NumIndexAttrs != first + 3 ||
		info->ii_NumIndexKeyAttrs != first + 3 ||
		list_length(info->ii_Expressions) != 1)
		return false;
	for (int k = 0; k < info->ii_NumIndexAttrs; k++)
		if (irel->rd_indoption[k] != 0) /* DESC or NULLS FIRST */
			return false;
	ok = (first == 0 ||
		  info->ii_IndexAttrNumbers[0] == schedq_direct_att[TASK_COL_QUEUE]) &&
		 info->ii_IndexAttrNumbers[first] == 0 &&
		 direct_is_claim_key(linitial(info->ii_Expressions)) &&
		 info->ii_IndexAttrNumbers[first + 1] ==
			 schedq_direct_att[TASK_COL_RUN_AT] &&
		 info->ii_IndexAttrNumbers[first + 2] == schedq_direct_att[TASK_COL_ID];
	if (which == CLAIM_INDEX_SQL)
		ok = ok && list_length(pred) == 2 &&
			 direct_is_text_eq(linitial(pred), TASK_COL_STATUS, "available") &&
			 direct_is_text_eq(lsecond(pred), TASK_COL_KIND, TASK_SQL);
	else
		ok = ok && list_length(pred) == 1 &&
			 direct_is_text_eq(linitial(pred), TASK_COL_STATUS, "available");
	/* the opclasses: the default ones of the key's types */
	for (int k = 0; ok && k < info->ii_NumIndexKeyAttrs; k++)
		ok = irel->rd_opfamily[k] ==
			 get_opclass_family(
				 GetDefaultOpClass(TupleDescAttr(RelationGetDescr(irel), k)
									   ->atttypid,
								   BTREE_AM_OID));
	return ok;
}

/*
 * Do the columns of the table match TASK_COLUMNS: every live column one
 * of them by name and type, each of them there (but the columns of a
 * version the database was not updated to), NOT NULL where the script
 * declares it and nowhere else?  Sets schedq_direct_att; returns the
 * reason to decline, or -1.
 */
static int
direct_describe_columns(TupleDesc desc)
{
	int live = 0;

	for (int c = 0; c < TASK_NUM_COLUMNS; c++)
		schedq_direct_att[c] = InvalidAttrNumber;
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		int				  c;

		if (att->attisdropped)
			continue;
		live++;
		for (c = 0; c < TASK_NUM_COLUMNS; c++)
			if (strcmp(NameStr(att->attname), schedq_task_column_names[c]) == 0)
				break;
		if (c == TASK_NUM_COLUMNS ||
			att->atttypid != schedq_task_column_types[c] || att->attgenerated)
			return DIRECT_DECLINE_COLUMNS;
		if (att->attnotnull != schedq_task_column_notnull[c])
			return DIRECT_DECLINE_CONSTRAINT;
		schedq_direct_att[c] = att->attnum;
	}
	if (live == TASK_NUM_COLUMNS)
		return -1;
	/* an older version's table: only the later versions' columns missing */
	for (int c = 0; c < TASK_FIRST_COLUMN_1_2; c++)
		if (schedq_direct_att[c] == InvalidAttrNumber)
			return DIRECT_DECLINE_COLUMNS;
	for (int c = TASK_FIRST_COLUMN_1_2; c < TASK_NUM_COLUMNS; c++)
		if (schedq_direct_att[c] != InvalidAttrNumber)
			return DIRECT_DECLINE_COLUMNS;
	return -1;
}

/*
 * Describe the table into the cache; cache.decline says whether the
 * direct writes may use it, and if not, why.  The table is open and
 * locked.
 */
static void
direct_describe(Relation rel)
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
	/* an invalidation while this runs makes the next write describe again */
	cache.valid = true;

	if (rel->rd_rel->relkind != RELKIND_RELATION ||
		rel->rd_rel->relam != HEAP_TABLE_AM_OID ||
		schedq_citus_table(cache.relid))
	{
		cache.decline = DIRECT_DECLINE_TABLE;
		return;
	}
	if (rel->rd_rules != NULL)
	{
		cache.decline = DIRECT_DECLINE_RULE;
		return;
	}
	/* another trigger (a DBA's): the trigger manager must fire it */
	if (rel->trigdesc != NULL)
		for (int t = 0; t < rel->trigdesc->numtriggers; t++)
			if (strcmp(rel->trigdesc->triggers[t].tgname,
					   DIRECT_STATUS_TRIGGER) != 0)
			{
				cache.decline = DIRECT_DECLINE_TRIGGER;
				return;
			}
	/* a CHECK constraint (a DBA's: schedq has none) is the executor's (PostgreSQL's) */
	if (desc->constr != NULL && desc->constr->num_check > 0)
	{
		cache.decline = DIRECT_DECLINE_CONSTRAINT;
		return;
	}
	/* the statements see the rows of tables that inherit from it */
	if (rel->rd_rel->relhassubclass)
	{
		cache.decline = DIRECT_DECLINE_INHERITED;
		return;
	}
	if ((cache.decline = direct_describe_columns(desc)) >= 0)
		return;
	cache.pkey = schedq_primary_key_index(rel);
	if (!OidIsValid(cache.pkey) ||
		!OidIsValid(
			schedq_identity_sequence(rel, schedq_direct_att[TASK_COL_ID])))
	{
		cache.decline = DIRECT_DECLINE_KEY;
		return;
	}

	old = MemoryContextSwitchTo(cache_cxt);

	/*
	 * The defaults of the columns, as the rewriter would add them to an
	 * INSERT that leaves them out (the identity too).
	 */
	for (int c = 0; c < TASK_NUM_COLUMNS; c++)
	{
		Node *def = schedq_direct_att[c] == InvalidAttrNumber ?
						NULL :
						build_column_default(rel, schedq_direct_att[c]);

		if (def != NULL)
			cache.defaults[c] =
				ExecInitExpr(expression_planner((Expr *) def), NULL);
	}

	indexes = RelationGetIndexList(rel);
	cache.indexes = palloc0(sizeof(DirectIndex) * Max(list_length(indexes), 1));
	foreach (lc, indexes)
	{
		Relation	 irel = index_open(lfirst_oid(lc), AccessShareLock);
		DirectIndex *ix = &cache.indexes[i++];
		IndexInfo	*info = BuildIndexInfo(irel);

		ix->indexoid = RelationGetRelid(irel);
		ix->info = info;
		cache.nindexes = i;
		/* complete's lookup scans the primary key as a B-tree on (id) */
		if (ix->indexoid == cache.pkey &&
			(irel->rd_rel->relam != BTREE_AM_OID ||
			 info->ii_NumIndexKeyAttrs != 1 ||
			 info->ii_IndexAttrNumbers[0] != schedq_direct_att[TASK_COL_ID]))
			cache.decline = DIRECT_DECLINE_KEY;
		else if (!irel->rd_index->indimmediate || info->ii_ExclusionOps != NULL)
			cache.decline = DIRECT_DECLINE_CONSTRAINT;
		if (cache.decline >= 0)
		{
			index_close(irel, NoLock);
			MemoryContextSwitchTo(old);
			return;
		}
		for (int w = 0; w < CLAIM_NUM_INDEXES; w++)
			if (strcmp(RelationGetRelationName(irel), claim_index_names[w]) ==
					0 &&
				direct_claim_index_ok(irel, w))
				cache.claim_index[w] = ix->indexoid;
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
	cache.decline = -1;
}

/*
 * Open schedq.task for a direct write that would be a statement of type
 * cmd (CMD_INSERT or CMD_UPDATE).  False, with nothing open, the reason in
 * *why and the decline counted, when the statement must do it.
 */
bool
schedq_direct_begin(SchedqDirectWrite *dw, CmdType cmd,
					SchedqDirectDecline *why)
{
	const char *command = cmd == CMD_INSERT ? "INSERT" : "UPDATE";
	Oid			nsp = get_namespace_oid("schedq", false);
	Oid			relid = get_relname_relid("task", nsp);

	if (!OidIsValid(relid))
		elog(ERROR, "schedq.task does not exist");
	if (!schedq_direct_writes)
	{
		*why = DIRECT_DECLINE_OFF;
		schedq_direct_declined(*why);
		return false;
	}
	/* the executor's checks of a statement that writes a table */
	PreventCommandIfReadOnly(command);
	PreventCommandIfParallelMode(command);
	dw->rel = table_open(relid, RowExclusiveLock);
	if (!cache.valid || cache.relid != relid)
		direct_describe(dw->rel);
	if (cache.decline < 0 &&
		check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED)
	{
		/* FORCE ROW LEVEL SECURITY on a table its non-superuser owner writes */
		table_close(dw->rel, NoLock);
		*why = DIRECT_DECLINE_ROW_SECURITY;
		schedq_direct_declined(*why);
		return false;
	}
	if (cache.decline >= 0)
	{
		table_close(dw->rel, NoLock);
		*why = cache.decline;
		schedq_direct_declined(*why);
		return false;
	}
	/* CheckValidResultRel's: an UPDATE a publication could not replicate */
	if (cmd == CMD_UPDATE)
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

void
schedq_direct_end(SchedqDirectWrite *dw)
{
	PopActiveSnapshot();
	ExecDropSingleTupleTableSlot(dw->slot);
	FreeExecutorState(dw->estate);
	table_close(dw->rel, NoLock);
	/* so that the statements after this write see it */
	CommandCounterIncrement();
}

/* The primary key, a B-tree on (id).  Inside a write. */
Oid
schedq_direct_primary_key(void)
{
	return cache.pkey;
}

/*
 * The claim index `which`, or InvalidOid when it is not the one the
 * script defines (the claim declines then).  Inside a write.
 */
Oid
schedq_direct_claim_index(SchedqClaimIndex which)
{
	return cache.claim_index[which];
}

/*
 * Give the columns of a new row in slot that set[] does not mark the
 * table's defaults (NULL where a column has none), as the rewriter adds
 * them to an INSERT that leaves them out; then raise PostgreSQL's executor's error
 * for a NOT NULL column that is NULL.
 */
void
schedq_direct_defaults(SchedqDirectWrite *dw, TupleTableSlot *slot,
					   const bool *set)
{
	ExprContext *econtext = GetPerTupleExprContext(dw->estate);
	TupleDesc	 desc = RelationGetDescr(dw->rel);

	for (int c = 0; c < TASK_NUM_COLUMNS; c++)
	{
		int a = schedq_direct_att[c] - 1;

		if (set[c] || a < 0)
			continue;
		slot->tts_isnull[a] = true;
		slot->tts_values[a] = (Datum) 0;
		if (cache.defaults[c] != NULL)
		{
			MemoryContext old =
				MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
			Datum value =
				ExecEvalExpr(cache.defaults[c], econtext, &slot->tts_isnull[a]);

			MemoryContextSwitchTo(old);
			/* the row outlives the per-tuple memory */
			slot->tts_values[a] =
				slot->tts_isnull[a] ?
					(Datum) 0 :
					datumCopy(value, TupleDescAttr(desc, a)->attbyval,
							  TupleDescAttr(desc, a)->attlen);
		}
	}
	ResetPerTupleExprContext(dw->estate);
	for (int a = 0; a < desc->natts; a++)
		if (slot->tts_isnull[a] && TupleDescAttr(desc, a)->attnotnull)
			ereport(ERROR, errcode(ERRCODE_NOT_NULL_VIOLATION),
					errmsg("null value in column \"%s\" of relation \"%s\" "
						   "violates not-null constraint",
						   NameStr(TupleDescAttr(desc, a)->attname),
						   RelationGetRelationName(dw->rel)));
}

/*
 * Insert index entries for the row version in slot (its tts_tid set),
 * into every index whose predicate it satisfies, as ExecInsertIndexTuples
 * does.  changed: the columns an update changed, as pull_varattnos
 * numbers them (NULL for an insert), for the index AM's hint that an
 * update left an index's key as it was.  which: the indexes heap_update
 * said need entries (all, for an insert).
 */
void
schedq_direct_index_insert(SchedqDirectWrite *dw, TupleTableSlot *slot,
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

/*
 * Update the row version old (locked by this transaction) as an UPDATE
 * setting columns cols[0..n-1] would, with its index entries.  Returns
 * the new version.
 */
HeapTuple
schedq_direct_update(SchedqDirectWrite *dw, HeapTuple old, int n,
					 const SchedqTaskColumn *cols, const Datum *values,
					 const bool *nulls)
{
	TupleDesc desc = RelationGetDescr(dw->rel);
	int		  attnums[TASK_NUM_COLUMNS];
	HeapTuple new;
	SchedqIndexUpdate which;

	Assert(n <= TASK_NUM_COLUMNS);
	for (int i = 0; i < n; i++)
		attnums[i] = schedq_direct_att[cols[i]];
	new = heap_modify_tuple_by_cols(old, desc, n, attnums, (Datum *) values,
									(bool *) nulls);
	which = schedq_heap_update(dw->rel, &old->t_self, new);
	if (which != SCHEDQ_INDEXES_NONE)
	{
		TupleTableSlot *newslot =
			MakeSingleTupleTableSlot(desc, &TTSOpsHeapTuple);
		Bitmapset *changed = NULL;

		for (int i = 0; i < n; i++)
			changed =
				bms_add_member(changed,
							   attnums[i] - FirstLowInvalidHeapAttributeNumber);
		ExecStoreHeapTuple(new, newslot, false);
		schedq_direct_index_insert(dw, newslot, changed, which);
		ExecDropSingleTupleTableSlot(newslot);
	}
	return new;
}

/* Is the text value the C string s? */
bool
schedq_direct_text_equals(Datum value, const char *s)
{
	text *t = DatumGetTextPP(value);
	int	  len = VARSIZE_ANY_EXHDR(t);

	return len == (int) strlen(s) && memcmp(VARDATA_ANY(t), s, len) == 0;
}

/* Is the text value among the elements of a text array (no NULL matches)? */
bool
schedq_direct_text_in(Datum value, const Datum *elems, const bool *nulls,
					  int nelems)
{
	text *t = DatumGetTextPP(value);
	int	  len = VARSIZE_ANY_EXHDR(t);

	for (int i = 0; i < nelems; i++)
	{
		text *e;

		if (nulls != NULL && nulls[i])
			continue;
		e = DatumGetTextPP(elems[i]);
		if (VARSIZE_ANY_EXHDR(e) == len &&
			memcmp(VARDATA_ANY(e), VARDATA_ANY(t), len) == 0)
			return true;
	}
	return false;
}
