/*-------------------------------------------------------------------------
 * base/version.c
 *	  The schedq version installed in the current database, read from
 *	  pg_extension.extversion and cached for the current command of the
 *	  current transaction (the rule for code that needs a newer catalog
 *	  is in version.h).
 *
 * The cache is keyed by the local transaction id and the command counter,
 * so an ALTER EXTENSION schedq UPDATE earlier in the same transaction is
 * seen by the next command, and nothing is ever invalidated by hand.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"

#include "base/compat.h"
#include "base/version.h"

static LocalTransactionId version_lxid = InvalidLocalTransactionId;
static CommandId		  version_cid = InvalidCommandId;
static int				  version_cached = 0;

/*
 * Parse "major.minor" into major * 100 + minor; -1 if it is not that.
 */
static int
version_parse(const char *text)
{
	int	 major, minor;
	char tail;

	if (sscanf(text, "%d.%d%c", &major, &minor, &tail) != 2 || major < 0 ||
		minor < 0 || minor > 99)
		return -1;
	return major * 100 + minor;
}

/*
 * Read extversion of schedq in the current database: its number, 0 if
 * schedq is not installed, -1 if the version is not of the form
 * major.minor.  Needs a transaction.
 */
static int
version_read(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	int			version = 0;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber,
				F_NAMEEQ, CStringGetDatum("schedq"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		bool  isnull;
		Datum datum = heap_getattr(tuple, Anum_pg_extension_extversion,
								   RelationGetDescr(rel), &isnull);

		version = isnull ? -1 : version_parse(TextDatumGetCString(datum));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return version;
}

/*
 * The schedq version installed in the current database (major * 100 +
 * minor), 0 when schedq is not installed, -1 when its version string is
 * not major.minor.  Cached for the current command of the current
 * transaction.  Must be called in a transaction.
 */
int
schedq_version_installed(void)
{
	CommandId cid = GetCurrentCommandId(false);

	if (version_lxid != SCHEDQ_MY_LXID || version_cid != cid)
	{
		version_cached = version_read();
		version_lxid = SCHEDQ_MY_LXID;
		version_cid = cid;
	}
	return version_cached;
}

/*
 * A version number as text ("1.1"), palloc'd.
 */
char *
schedq_version_string(int version)
{
	if (version <= 0)
		return pstrdup(version == 0 ? "not installed" : "unknown");
	return psprintf("%d.%d", version / 100, version % 100);
}
