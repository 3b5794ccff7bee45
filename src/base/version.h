/*-------------------------------------------------------------------------
 * base/version.h
 *	  The schedq version installed in the current database (its catalog),
 *	  next to the version of this library.
 *
 * The rule: one library serves every database of the cluster, and a
 * database may still be at an older version of the extension than the
 * library (ALTER EXTENSION schedq UPDATE not yet run).  A C function behind
 * a SQL object added in version X, or one whose code needs a table, column
 * or function added in X, checks schedq_version_installed() before it
 * touches the catalog: against an older catalog it fails with SQLSTATE
 * 55000 and the hint to update, never with a confusing error about a
 * missing column.  The background workers keep working on an older
 * catalog: they use only what every version has, or ask
 * schedq_version_installed() and do the old thing.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_VERSION_H
#define SCHEDQ_VERSION_H

/* A version as a number: major * 100 + minor (1.1 is 101). */
#define SCHEDQ_VERSION_1_0 100
#define SCHEDQ_VERSION_1_1 101
#define SCHEDQ_VERSION_1_2 102
/* The version of the extension script this library was built with. */
#define SCHEDQ_LIBRARY_VERSION SCHEDQ_VERSION_1_2

extern int	 schedq_version_installed(void);
extern char *schedq_version_string(int version);

#endif /* SCHEDQ_VERSION_H */
