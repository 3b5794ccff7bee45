/*
 * clients/node/lib/errors.js
 *	  schedq's SQLSTATEs (docs/reference.md, "Errors") as named error
 *	  classes.  Each keeps the SQLSTATE, the server's message, detail and
 *	  hint, and the driver's error as `cause`.
 */
'use strict';

/* Every error of this library. */
class SchedqError extends Error {
	constructor(message, fields = {}) {
		super(message, fields.cause === undefined ? undefined : { cause: fields.cause });
		this.name = new.target.name;
		this.sqlstate = fields.sqlstate;
		this.detail = fields.detail;
		this.hint = fields.hint;
	}
}

const classes = {};
function sqlstateClass(name, sqlstate) {
	const cls = { [name]: class extends SchedqError {} }[name];
	cls.sqlstate = sqlstate;
	classes[sqlstate] = cls;
	return cls;
}

const NullValueNotAllowed = sqlstateClass('NullValueNotAllowed', '22004');
const InvalidArgument = sqlstateClass('InvalidArgument', '22023');
const ArraySubscriptError = sqlstateClass('ArraySubscriptError', '2202E');
const MalformedToken = sqlstateClass('MalformedToken', '22P02');
const ForgedToken = sqlstateClass('ForgedToken', '28000');
const LimitExceeded = sqlstateClass('LimitExceeded', '54000');
const PermissionDenied = sqlstateClass('PermissionDenied', '42501');
const NotFound = sqlstateClass('NotFound', '42704');
const SchemaNotFound = sqlstateClass('SchemaNotFound', '3F000');
const ReferenceNotFound = sqlstateClass('ReferenceNotFound', '23503');
const DuplicateKey = sqlstateClass('DuplicateKey', '23505');
const SerializationFailure = sqlstateClass('SerializationFailure', '40001');
const ObjectNotInPrerequisiteState = sqlstateClass('ObjectNotInPrerequisiteState', '55000');
const FeatureNotSupported = sqlstateClass('FeatureNotSupported', '0A000');
const ActiveSqlTransaction = sqlstateClass('ActiveSqlTransaction', '25001');
const ReadOnlySqlTransaction = sqlstateClass('ReadOnlySqlTransaction', '25006');
const QueryCanceled = sqlstateClass('QueryCanceled', '57014');
const InternalError = sqlstateClass('InternalError', 'XX000');

/* The installed schedq is missing or older than this library supports. */
class UnsupportedVersion extends SchedqError {}

/* The worker's first connection failed (a wrong password, say). */
class CouldNotConnect extends SchedqError {}

/* A driver error from the server: its SQLSTATE's class (or SchedqError
 * for another SQLSTATE).  Anything else (a network error, a bug) is
 * returned as it is. */
function wrap(err) {
	if (!err || err instanceof SchedqError || typeof err.code !== 'string' || !err.severity)
		return err;
	const Cls = classes[err.code] || SchedqError;
	return new Cls(err.message, {
		sqlstate: err.code,
		detail: err.detail,
		hint: err.hint,
		cause: err,
	});
}

/* A handler's way to say how its task failed: retry after `retryIn`
 * seconds (null: schedq's back-off) ... */
class RetryAfter extends Error {
	constructor(message, retryIn = null) {
		super(message);
		this.name = 'RetryAfter';
		this.retryIn = retryIn;
	}
}

/* ... or fail it for good, whatever attempts are left. */
class PermanentFailure extends Error {
	constructor(message) {
		super(message);
		this.name = 'PermanentFailure';
	}
}

module.exports = {
	SchedqError,
	NullValueNotAllowed,
	InvalidArgument,
	ArraySubscriptError,
	MalformedToken,
	ForgedToken,
	LimitExceeded,
	PermissionDenied,
	NotFound,
	SchemaNotFound,
	ReferenceNotFound,
	DuplicateKey,
	SerializationFailure,
	ObjectNotInPrerequisiteState,
	FeatureNotSupported,
	ActiveSqlTransaction,
	ReadOnlySqlTransaction,
	QueryCanceled,
	InternalError,
	UnsupportedVersion,
	CouldNotConnect,
	RetryAfter,
	PermanentFailure,
	wrap,
	errorClasses: classes,
};
