/*
 * clients/node/index.js
 *	  schedq for Node.js: a thin layer over schedq's SQL API
 *	  (docs/reference.md) on node-postgres.  Submitting and managing take
 *	  the caller's pg Client or PoolClient (lib/api.js); Worker is a worker
 *	  pool (lib/worker.js); the errors are named by SQLSTATE
 *	  (lib/errors.js).  Types: index.d.ts.
 */
'use strict';

const api = require('./lib/api');
const errors = require('./lib/errors');
const { Worker, Job } = require('./lib/worker');

module.exports = {
	submit: api.submit,
	submitMany: api.submitMany,
	submitSql: api.submitSql,
	schedule: api.schedule,
	unschedule: api.unschedule,
	setScheduleEnabled: api.setScheduleEnabled,
	createRun: api.createRun,
	cancelRun: api.cancelRun,
	cancel: api.cancel,
	retry: api.retry,
	pauseQueue: api.pauseQueue,
	resumeQueue: api.resumeQueue,
	setConcurrencyLimit: api.setConcurrencyLimit,
	setBudget: api.setBudget,
	checkVersion: api.checkVersion,
	SUPPORTED_VERSIONS: api.SUPPORTED_VERSIONS,
	Worker,
	Job,
	SchedqError: errors.SchedqError,
	NullValueNotAllowed: errors.NullValueNotAllowed,
	InvalidArgument: errors.InvalidArgument,
	ArraySubscriptError: errors.ArraySubscriptError,
	MalformedToken: errors.MalformedToken,
	ForgedToken: errors.ForgedToken,
	LimitExceeded: errors.LimitExceeded,
	PermissionDenied: errors.PermissionDenied,
	NotFound: errors.NotFound,
	SchemaNotFound: errors.SchemaNotFound,
	ReferenceNotFound: errors.ReferenceNotFound,
	DuplicateKey: errors.DuplicateKey,
	SerializationFailure: errors.SerializationFailure,
	ObjectNotInPrerequisiteState: errors.ObjectNotInPrerequisiteState,
	FeatureNotSupported: errors.FeatureNotSupported,
	ActiveSqlTransaction: errors.ActiveSqlTransaction,
	ReadOnlySqlTransaction: errors.ReadOnlySqlTransaction,
	QueryCanceled: errors.QueryCanceled,
	InternalError: errors.InternalError,
	UnsupportedVersion: errors.UnsupportedVersion,
	CouldNotConnect: errors.CouldNotConnect,
	RetryAfter: errors.RetryAfter,
	PermanentFailure: errors.PermanentFailure,
	errorFromDriver: errors.wrap,
};
