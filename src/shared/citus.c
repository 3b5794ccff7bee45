/*-------------------------------------------------------------------------
 * shared/citus.c
 *	  What schedq asks of Citus's catalogs, where Citus is installed: read
 *	  directly, so that a server without Citus pays one failed name lookup.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/pg_namespace.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "shared/citus.h"

/*
 * Is the table one of Citus's (pg_dist_partition has it)?  Then its rows
 * are in shards that only Citus's planner finds: the table itself is an
 * empty shell.  False, without a lookup, where Citus is not installed.
 */
bool
schedq_citus_table(Oid relid)
{
	Oid dist = get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE);
	Oid index;
	AttrNumber	att;
	Relation	prel;
	ScanKeyData key;
	SysScanDesc scan;
	bool		found;

	if (!OidIsValid(dist))
		return false;
	att = get_attnum(dist, "logicalrelid");
	if (att == InvalidAttrNumber)
		return true; /* a pg_dist_partition of another shape */
	/* through Citus's index on logicalrelid when it has one (it does) */
	index = get_relname_relid("pg_dist_partition_logical_relid_index",
							  PG_CATALOG_NAMESPACE);
	prel = table_open(dist, AccessShareLock);
	ScanKeyInit(&key, OidIsValid(index) ? 1 : att, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(relid));
	scan = systable_beginscan(prel, index, OidIsValid(index), NULL, 1, &key);
	found = HeapTupleIsValid(systable_getnext(scan));
	systable_endscan(scan);
	table_close(prel, AccessShareLock);
	return found;
}

/*
 * Is this server Citus's coordinator (group 0 in pg_dist_local_group)?
 * False where Citus is not installed.
 */
bool
schedq_citus_coordinator(void)
{
	Oid rel = get_relname_relid("pg_dist_local_group", PG_CATALOG_NAMESPACE);
	AttrNumber	att;
	Relation	lrel;
	SysScanDesc scan;
	HeapTuple	tuple;
	bool		result = false;

	if (!OidIsValid(rel))
		return false;
	att = get_attnum(rel, "groupid");
	if (att == InvalidAttrNumber)
		return false;
	lrel = table_open(rel, AccessShareLock);
	scan = systable_beginscan(lrel, InvalidOid, false, NULL, 0, NULL);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		bool  isnull;
		Datum group = heap_getattr(tuple, att, RelationGetDescr(lrel), &isnull);

		result = !isnull && DatumGetInt32(group) == 0;
	}
	systable_endscan(scan);
	table_close(lrel, AccessShareLock);
	return result;
}
