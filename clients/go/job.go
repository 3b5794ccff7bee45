package schedq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Job is one attempt of a task, as a handler gets it.
type Job struct {
	ID             int64
	Attempt        int32
	Queue          string
	Kind           string
	Payload        json.RawMessage
	Priority       int32
	RunID          *int64
	LeaseExpiresAt time.Time
	// Token is the signed grant of this attempt: heartbeat, progress,
	// complete and fail take it, from any session.
	Token string

	worker    *Worker
	completed atomic.Bool // CompleteTx ran: the pool does not complete it
}

// Progress records how far the attempt has come (0 to 100) and a note
// ("" for none), visible in schedq.task; it also extends the lease.  It
// returns ErrStaleToken when the attempt is no longer the running one.
func (j *Job) Progress(ctx context.Context, percent float32, note string) error {
	var n *string
	if note != "" {
		n = &note
	}
	var lease *time.Time
	err := j.worker.pool.QueryRow(ctx, "SELECT schedq.progress($1, $2, $3)",
		j.Token, percent, n).Scan(&lease)
	if err != nil {
		return wrap(err)
	}
	if lease == nil {
		return ErrStaleToken
	}
	return nil
}

// CompleteTx completes the attempt with result inside tx, the handler's
// own transaction: the handler's writes and the completion commit
// together, or neither does.  The handler commits tx itself; the pool
// then does not complete the task again.  If the handler returns an error
// after CompleteTx (its transaction rolled back), the pool fails the
// attempt as usual.  Returns ErrStaleToken when the attempt is no longer
// the running one (nothing was completed: roll back).
func (j *Job) CompleteTx(ctx context.Context, tx DB, result any) error {
	r, err := resultJSON(result)
	if err != nil {
		return err
	}
	ok, err := scalar[bool](ctx, tx, "SELECT schedq.complete($1, $2::jsonb)", j.Token, r)
	if err != nil {
		return err
	}
	if !ok {
		return ErrStaleToken
	}
	j.completed.Store(true)
	return nil
}

func resultJSON(result any) (*string, error) {
	if result == nil {
		return nil, nil
	}
	s, err := jsonOf(result)
	if err != nil {
		return nil, fmt.Errorf("schedq: result: %w", err)
	}
	return &s, nil
}

// A Handler runs one attempt of a task.  It returns the task's result (any
// value encoding/json takes, or nil) or an error: the attempt fails with
// the error's text, and schedq retries it with its backoff while attempts
// remain (see Permanent and RetryAfter).  ctx is canceled when the
// attempt is no longer this worker's (canceled, or taken back after its
// lease) or the worker is aborted.
type Handler func(ctx context.Context, job *Job) (any, error)

// Typed makes a Handler of a function that takes the payload decoded into
// T; a payload that does not decode fails the task permanently.
func Typed[T any](fn func(ctx context.Context, job *Job, payload T) (any, error)) Handler {
	return func(ctx context.Context, job *Job) (any, error) {
		var p T
		if err := json.Unmarshal(job.Payload, &p); err != nil {
			return nil, Permanent(fmt.Errorf("bad input: %w", err))
		}
		return fn(ctx, job, p)
	}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks a handler's error as final: the task fails without
// retrying (bad input that can never succeed).
func Permanent(err error) error { return &permanentError{err} }

type retryError struct {
	err   error
	after time.Duration
}

func (e *retryError) Error() string { return e.err.Error() }
func (e *retryError) Unwrap() error { return e.err }

// RetryAfter marks a handler's error as temporary, to be retried after d
// instead of schedq's backoff (while attempts remain).
func RetryAfter(err error, d time.Duration) error { return &retryError{err, d} }

// failure is how to report a handler's error.
func failure(err error) (msg string, retryIn *float64, permanent bool) {
	msg = err.Error()
	if len(msg) > 65536 {
		msg = msg[:65536]
		for len(msg) > 0 && !utf8.ValidString(msg) {
			msg = msg[:len(msg)-1]
		}
	}
	var p *permanentError
	var r *retryError
	if errors.As(err, &p) {
		permanent = true
	} else if errors.As(err, &r) {
		s := r.after.Seconds()
		retryIn = &s
	}
	return
}
