/*-------------------------------------------------------------------------
 * compat.h
 *	  Every PostgreSQL version test of schedq, and the shims that let one
 *	  source tree build against PostgreSQL 15 and later.
 *
 * PostgreSQL 15 is the floor: it is the first version with
 * shmem_request_hook.
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

#endif /* SCHEDQ_COMPAT_H */
