package schedq

import (
	"errors"
	"fmt"

	"github.com/jackc/pgconn"
)

// Sentinel errors, one per SQLSTATE that schedq raises (see "Errors" in
// docs/reference.md).  A *Error from this package matches the sentinel of
// its SQLSTATE with errors.Is:
//
//	if errors.Is(err, schedq.ErrInvalidArgument) { ... }
var (
	ErrNullValue              = errors.New("schedq: null value not allowed")                // 22004
	ErrInvalidArgument        = errors.New("schedq: invalid argument")                      // 22023
	ErrArrayDimension         = errors.New("schedq: array with more than one dimension")    // 2202E
	ErrMalformedToken         = errors.New("schedq: malformed token")                       // 22P02
	ErrForgedToken            = errors.New("schedq: token with a bad signature")            // 28000
	ErrLimitExceeded          = errors.New("schedq: limit exceeded")                        // 54000
	ErrPermissionDenied       = errors.New("schedq: permission denied")                     // 42501
	ErrNotFound               = errors.New("schedq: not found")                             // 42704
	ErrForeignKeyViolation    = errors.New("schedq: run or dependency does not exist")      // 23503
	ErrUniqueViolation        = errors.New("schedq: dedup_key already has a live task")     // 23505
	ErrSerializationFailure   = errors.New("schedq: serialization failure, retry the call") // 40001
	ErrNotInPrerequisiteState = errors.New("schedq: object not in prerequisite state")      // 55000
	ErrFeatureNotSupported    = errors.New("schedq: feature not supported")                 // 0A000
	ErrActiveSQLTransaction   = errors.New("schedq: inside a transaction block")            // 25001
	ErrReadOnlySQLTransaction = errors.New("schedq: server is read-only")                   // 25006
	ErrQueryCanceled          = errors.New("schedq: statement canceled or timed out")       // 57014
)

// Errors of this package that are not a SQLSTATE.
var (
	// ErrStaleToken: the token's attempt is no longer the running one (its
	// lease expired and the reaper took the task back, it was canceled, it
	// is finished); the call changed nothing.
	ErrStaleToken = errors.New("schedq: stale token")
	// ErrUnsupportedVersion: the database's schedq is older than this
	// library supports (1.2), or not installed.
	ErrUnsupportedVersion = errors.New("schedq: unsupported schedq version")
	// ErrCannotConnect: a worker could not make its first connection.
	ErrCannotConnect = errors.New("schedq: could not connect")
	// ErrAborted: Worker.Run was stopped at once (Abort, or a second
	// signal); tasks in hand are left to the reaper.
	ErrAborted = errors.New("schedq: worker aborted")
)

var sentinels = map[string]error{
	"22004": ErrNullValue,
	"22023": ErrInvalidArgument,
	"2202E": ErrArrayDimension,
	"22P02": ErrMalformedToken,
	"28000": ErrForgedToken,
	"54000": ErrLimitExceeded,
	"42501": ErrPermissionDenied,
	"42704": ErrNotFound,
	"23503": ErrForeignKeyViolation,
	"23505": ErrUniqueViolation,
	"40001": ErrSerializationFailure,
	"55000": ErrNotInPrerequisiteState,
	"0A000": ErrFeatureNotSupported,
	"25001": ErrActiveSQLTransaction,
	"25006": ErrReadOnlySQLTransaction,
	"57014": ErrQueryCanceled,
}

// Error is an error the server raised, with its SQLSTATE and its words.
// Err is the driver's error (a *pgconn.PgError): errors.As reaches it.
type Error struct {
	SQLState string
	Message  string
	Detail   string
	Hint     string
	Err      error
}

func (e *Error) Error() string {
	s := fmt.Sprintf("schedq: %s (SQLSTATE %s)", e.Message, e.SQLState)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns the driver's error.
func (e *Error) Unwrap() error { return e.Err }

// Is matches the sentinel error of the SQLSTATE.
func (e *Error) Is(target error) bool {
	s, ok := sentinels[e.SQLState]
	return ok && s == target
}

// wrap turns a server error into an *Error; other errors (a lost
// connection, a canceled context) are returned as they are.
func wrap(err error) error {
	var pgErr *pgconn.PgError
	if err == nil || !errors.As(err, &pgErr) {
		return err
	}
	var mine *Error
	if errors.As(err, &mine) {
		return err
	}
	return &Error{SQLState: pgErr.Code, Message: pgErr.Message,
		Detail: pgErr.Detail, Hint: pgErr.Hint, Err: err}
}

// connectionLost says whether err is worth retrying on a new connection:
// the connection broke, the server is going away, busy or read-only (a
// primary fenced off in a failover), or it refused a new connection.
func connectionLost(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "40", "53", "57", "28":
			return pgErr.Code != "28000" || !isTokenError(pgErr)
		}
		return pgErr.Code == "25006"
	}
	return !errors.Is(err, ErrAborted)
}

// isTokenError: 28000 raised by schedq for a forged token, not by the
// server refusing a login.
func isTokenError(pgErr *pgconn.PgError) bool {
	return pgErr.Severity == "ERROR"
}

type connectError struct{ err error }

func (e *connectError) Error() string        { return "could not connect: " + e.err.Error() }
func (e *connectError) Unwrap() error        { return e.err }
func (e *connectError) Is(target error) bool { return target == ErrCannotConnect }
