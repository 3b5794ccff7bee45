/*-------------------------------------------------------------------------
 * base/compat.h
 *	  Every PostgreSQL version test of schedq, and the shims that let one
 *	  source tree build against PostgreSQL 15 to 19.
 *
 * PostgreSQL 15 is the floor: it is the first version with
 * shmem_request_hook.  Each difference between versions is tested here
 * once, as a macro or a small inline function named for what schedq needs
 * (not for the version), and the code calls that.  The table below says
 * which version changed what; CONTRIBUTING.md says which versions are
 * built and tested.
 *
 *	16	object_aclcheck replaces pg_*_aclcheck; heap_update says which
 *		indexes need new entries (TU_UpdateIndexes: a HOT update may still
 *		need entries in summarizing indexes such as BRIN)
 *	17	PushOverrideSearchPath is gone (a GUC nest level sets search_path
 *		instead, as CREATE EXTENSION does); MyBackendId became
 *		MyProcNumber (0-based); the local transaction id moved into
 *		PGPROC.vxid; getIdentitySequence takes the relation; custom wait
 *		events; pgstat_fetch_stat_local_beentry became
 *		pgstat_get_local_beentry_by_index
 *	18	RelationGetPrimaryKeyIndex takes deferrable_ok; index_beginscan
 *		takes instrumentation; pg_noreturn replaces pg_attribute_noreturn()
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_COMPAT_H
#define SCHEDQ_COMPAT_H

#include "postgres.h"

#if PG_VERSION_NUM < 150000
#error "schedq requires PostgreSQL 15 or later"
#endif

#define PG16_GE (PG_VERSION_NUM >= 160000)
#define PG17_GE (PG_VERSION_NUM >= 170000)
#define PG18_GE (PG_VERSION_NUM >= 180000)
#define PG19_GE (PG_VERSION_NUM >= 190000)

/*
 * A function that does not return: pg_noreturn, before the declaration,
 * from 18 (pg_attribute_noreturn() after it is gone).
 */
#ifndef pg_noreturn
#define pg_noreturn pg_attribute_noreturn()
#endif

/*
 * pg_class_aclcheck and friends became object_aclcheck in 16; schedq needs
 * role membership checks, which did not change, and one of a tablespace.
 */
#if PG16_GE
#define schedq_tablespace_aclcheck(spcoid, roleid, mode)                       \
	object_aclcheck(TableSpaceRelationId, (spcoid), (roleid), (mode))
#else
#define schedq_tablespace_aclcheck(spcoid, roleid, mode)                       \
	pg_tablespace_aclcheck((spcoid), (roleid), (mode))
#endif

/* Custom wait events arrived in 17. */
#if PG17_GE
#define SCHEDQ_WAIT_EVENT(name) WaitEventExtensionNew(name)
#else
#define SCHEDQ_WAIT_EVENT(name) PG_WAIT_EXTENSION
#endif

/* The backend's local transaction id moved into PGPROC.vxid in 17. */
#if PG17_GE
#define SCHEDQ_MY_LXID (MyProc->vxid.lxid)
#else
#define SCHEDQ_MY_LXID (MyProc->lxid)
#endif

/*
 * This backend's index among the first MaxBackends PGPROCs (the regular
 * backends and background workers), from 0: what per-backend arrays in
 * shared memory are indexed by.
 */
#if PG17_GE
#include "storage/procnumber.h"
#define SCHEDQ_MY_PROC_INDEX ((int) MyProcNumber)
#else
#include "storage/backendid.h"
#define SCHEDQ_MY_PROC_INDEX ((int) MyBackendId - 1)
#endif

/*
 * The status of the idx-th backend (from 1) of this transaction's
 * snapshot of pg_stat_activity; pgstat_fetch_stat_numbackends() is how
 * many there are.  Renamed in 17.
 */
#if PG17_GE
#define schedq_backend_status(idx) pgstat_get_local_beentry_by_index(idx)
#else
#define schedq_backend_status(idx) pgstat_fetch_stat_local_beentry(idx)
#endif

/* The identity sequence of a column. */
#if PG17_GE
#define schedq_identity_sequence(rel, attnum)                                  \
	getIdentitySequence((rel), (attnum), true)
#else
#define schedq_identity_sequence(rel, attnum)                                  \
	getIdentitySequence(RelationGetRelid(rel), (attnum), true)
#endif

/* The primary key of a table (a deferrable one counts as none). */
#if PG18_GE
#define schedq_primary_key_index(rel) RelationGetPrimaryKeyIndex((rel), false)
#else
#define schedq_primary_key_index(rel) RelationGetPrimaryKeyIndex((rel))
#endif

/* An index scan with no instrumentation. */
#if PG18_GE
#define schedq_index_beginscan(heap, index, snapshot, nkeys, norderbys)        \
	index_beginscan((heap), (index), (snapshot), NULL, (nkeys), (norderbys))
#else
#define schedq_index_beginscan(heap, index, snapshot, nkeys, norderbys)        \
	index_beginscan((heap), (index), (snapshot), (nkeys), (norderbys))
#endif

/*
 * Which indexes an updated row version needs entries in: none (a HOT
 * update), only the summarizing ones (a HOT update whose changed columns
 * only summarizing indexes cover, 16 and later), or all.
 */
typedef enum SchedqIndexUpdate
{
	SCHEDQ_INDEXES_NONE,
	SCHEDQ_INDEXES_SUMMARIZING,
	SCHEDQ_INDEXES_ALL,
} SchedqIndexUpdate;

#ifdef HEAPAM_H
static inline SchedqIndexUpdate
schedq_heap_update(Relation rel, ItemPointer otid, HeapTuple tup)
{
#if PG16_GE
	TU_UpdateIndexes update_indexes;

	simple_heap_update(rel, otid, tup, &update_indexes);
	return update_indexes == TU_None		? SCHEDQ_INDEXES_NONE :
		   update_indexes == TU_Summarizing ? SCHEDQ_INDEXES_SUMMARIZING :
											  SCHEDQ_INDEXES_ALL;
#else
	simple_heap_update(rel, otid, tup);
	return HeapTupleIsHeapOnly(tup) ? SCHEDQ_INDEXES_NONE : SCHEDQ_INDEXES_ALL;
#endif
}
#endif

/*
 * Whether an index only summarizes (BRIN): a HOT update still inserts
 * into it.  Before 16 no update is HOT that changes an indexed column.
 */
#if PG16_GE
#define schedq_index_summarizing(info) ((info)->ii_Summarizing)
#else
#define schedq_index_summarizing(info) false
#endif

/*
 * Run queries with search_path pinned to pg_catalog (and pg_temp, last);
 * schedq_search_path_pop undoes it.  Before 17, an override search path
 * (the mechanism CREATE EXTENSION scripts ran under); from 17, where it is
 * gone, search_path set at a new GUC nest level, as CREATE EXTENSION now
 * does.  Transaction or subtransaction abort undoes either.
 */
typedef int SchedqSearchPath;

#if PG17_GE
#include "utils/guc.h"

static inline SchedqSearchPath
schedq_search_path_push(void)
{
	int nestlevel = NewGUCNestLevel();

	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	return nestlevel;
}

static inline void
schedq_search_path_pop(SchedqSearchPath saved)
{
	AtEOXact_GUC(true, saved);
}
#else
#include "catalog/namespace.h"

static inline SchedqSearchPath
schedq_search_path_push(void)
{
	static OverrideSearchPath path = { .schemas = NIL,
									   .addCatalog = true,
									   .addTemp = false };

	PushOverrideSearchPath(&path);
	return 0;
}

static inline void
schedq_search_path_pop(SchedqSearchPath saved)
{
	PopOverrideSearchPath();
}
#endif

#endif /* SCHEDQ_COMPAT_H */
