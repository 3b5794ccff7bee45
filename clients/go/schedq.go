// Package schedq is the Go client of schedq, a durable task queue and
// scheduler inside PostgreSQL.  It is a thin typed layer over schedq's SQL
// API (docs/reference.md), on pgx v4.
//
// Submitting takes the caller's connection or transaction (a DB: pgx.Tx,
// *pgx.Conn or *pgxpool.Pool), so a task is created if and only if the
// application's own write commits:
//
//	tx, _ := pool.Begin(ctx)
//	defer tx.Rollback(ctx)
//	// ... the application's writes ...
//	id, err := schedq.Submit(ctx, tx, "email", map[string]any{"to": to}, nil)
//	...
//	tx.Commit(ctx)
//
// Working: a Worker runs handlers by kind, with one claim loop for the
// whole pool (see Worker).
//
// Errors the server raises come back as *Error, which keeps the SQLSTATE
// and matches the sentinel errors (ErrInvalidArgument, ErrNotFound,
// ErrPermissionDenied, ...) with errors.Is.
//
// This version of the library supports schedq 1.2.
package schedq

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgx/v4"
)

// Version is the version of this library; it goes with schedq's own.
const Version = "1.2.0"

// MinSchedqVersion is the oldest schedq extension version supported.
const MinSchedqVersion = "1.2"

// DB is what the calls of this package run on: pgx.Tx, *pgx.Conn and
// *pgxpool.Pool all satisfy it.  None of them commits: in a transaction,
// the call's effect commits with the transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...interface{}) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...interface{}) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...interface{}) pgx.Row
}

// SubmitOptions are schedq.submit's arguments after kind and payload.  A
// zero field takes schedq's default.
type SubmitOptions struct {
	Queue          string        // "default"
	Priority       int32         // 0; higher runs first
	RunAt          time.Time     // now
	MaxAttempts    int32         // 5
	Timeout        time.Duration // none
	LockKey        string        // none
	Version        *int64        // none
	ConcurrencyKey string        // none
	RequiredCaps   []string      // none
	Budgets        []string      // none
	Cost           *float64      // 1
	RunID          int64         // none: not in a workflow run
	DependsOn      []int64       // none
	DedupKey       string        // none
}

// args appends the options that are set as named arguments ("name =>
// $n") to args, and their values to vals.
func (o *SubmitOptions) args(args []string, vals []any) ([]string, []any) {
	if o == nil {
		return args, vals
	}
	add := func(name, cast string, v any) {
		vals = append(vals, v)
		args = append(args, fmt.Sprintf("%s => $%d%s", name, len(vals), cast))
	}
	if o.Queue != "" {
		add("queue", "::text", o.Queue)
	}
	if o.Priority != 0 {
		add("priority", "::integer", o.Priority)
	}
	if !o.RunAt.IsZero() {
		add("run_at", "::timestamptz", o.RunAt)
	}
	if o.MaxAttempts != 0 {
		add("max_attempts", "::integer", o.MaxAttempts)
	}
	if o.Timeout != 0 {
		add("timeout", "::interval", o.Timeout)
	}
	if o.LockKey != "" {
		add("lock_key", "::text", o.LockKey)
	}
	if o.Version != nil {
		add("version", "::bigint", *o.Version)
	}
	if o.ConcurrencyKey != "" {
		add("concurrency_key", "::text", o.ConcurrencyKey)
	}
	if o.RequiredCaps != nil {
		add("required_caps", "::text[]", o.RequiredCaps)
	}
	if o.Budgets != nil {
		add("budgets", "::text[]", o.Budgets)
	}
	if o.Cost != nil {
		add("cost", "::numeric", strconv.FormatFloat(*o.Cost, 'g', -1, 64))
	}
	if o.RunID != 0 {
		add("run_id", "::bigint", o.RunID)
	}
	if o.DependsOn != nil {
		add("depends_on", "::bigint[]", o.DependsOn)
	}
	if o.DedupKey != "" {
		add("dedup_key", "::text", o.DedupKey)
	}
	return args, vals
}

// jsonOf is payload as JSON text: json.RawMessage and []byte as they are,
// nil as {}, anything else through encoding/json.
func jsonOf(payload any) (string, error) {
	switch p := payload.(type) {
	case nil:
		return "{}", nil
	case json.RawMessage:
		return string(p), nil
	case []byte:
		return string(p), nil
	}
	b, err := json.Marshal(payload)
	if err != nil {
		return "", fmt.Errorf("schedq: payload: %w", err)
	}
	return string(b), nil
}

// Submit submits a task of kind with payload (any value encoding/json
// takes; nil is {}) and returns its id (or, with a DedupKey, the id of
// the live task that holds it).  It runs on db and never commits.
func Submit(ctx context.Context, db DB, kind string, payload any, opts *SubmitOptions) (int64, error) {
	p, err := jsonOf(payload)
	if err != nil {
		return 0, err
	}
	args, vals := opts.args([]string{"$1::text", "$2::jsonb"}, []any{kind, p})
	return scalar[int64](ctx, db, "SELECT schedq.submit("+strings.Join(args, ", ")+")", vals...)
}

// SubmitSQL submits a SQL command, run by schedq's executor as the
// submitting role (schedq.submit_sql).  opts as Submit's.
func SubmitSQL(ctx context.Context, db DB, command string, opts *SubmitOptions) (int64, error) {
	args, vals := opts.args([]string{"$1::text"}, []any{command})
	return scalar[int64](ctx, db, "SELECT schedq.submit_sql("+strings.Join(args, ", ")+")", vals...)
}

// NewTask is one task of SubmitMany.
type NewTask struct {
	Kind    string
	Payload any
	Options *SubmitOptions
}

// SubmitMany submits tasks in one statement (schedq.submit_many): all or
// none; the ids in order.
func SubmitMany(ctx context.Context, db DB, tasks []NewTask) ([]int64, error) {
	objs := make([]map[string]any, len(tasks))
	for i, t := range tasks {
		p, err := jsonOf(t.Payload)
		if err != nil {
			return nil, err
		}
		m := map[string]any{"kind": t.Kind, "payload": json.RawMessage(p)}
		if o := t.Options; o != nil {
			set := func(k string, ok bool, v any) {
				if ok {
					m[k] = v
				}
			}
			set("queue", o.Queue != "", o.Queue)
			set("priority", o.Priority != 0, o.Priority)
			set("run_at", !o.RunAt.IsZero(), o.RunAt)
			set("max_attempts", o.MaxAttempts != 0, o.MaxAttempts)
			set("timeout", o.Timeout != 0, interval(o.Timeout))
			set("lock_key", o.LockKey != "", o.LockKey)
			set("version", o.Version != nil, o.Version)
			set("concurrency_key", o.ConcurrencyKey != "", o.ConcurrencyKey)
			set("required_caps", o.RequiredCaps != nil, o.RequiredCaps)
			set("budgets", o.Budgets != nil, o.Budgets)
			set("cost", o.Cost != nil, o.Cost)
			set("run_id", o.RunID != 0, o.RunID)
			set("depends_on", o.DependsOn != nil, o.DependsOn)
			set("dedup_key", o.DedupKey != "", o.DedupKey)
		}
		objs[i] = m
	}
	b, err := json.Marshal(objs)
	if err != nil {
		return nil, fmt.Errorf("schedq: tasks: %w", err)
	}
	return column[int64](ctx, db, "SELECT schedq.submit_many($1::jsonb)", string(b))
}

// interval is a duration as PostgreSQL interval text.
func interval(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " seconds"
}

// ScheduleOptions are schedq.schedule's arguments after kind and payload.
type ScheduleOptions struct {
	Timezone       string // "UTC"
	Disabled       bool   // created disabled
	Queue          string
	Priority       int32
	MaxAttempts    int32
	Timeout        time.Duration
	LockKey        string
	ConcurrencyKey string
	RequiredCaps   []string
	Budgets        []string
	Cost           *float64
}

// Schedule creates or replaces the periodic task name: a task of kind with
// payload at each tick of schedule (cron syntax, or "@every 5 minutes"
// ...; see docs/reference.md).
func Schedule(ctx context.Context, db DB, name, schedule, kind string, payload any, opts *ScheduleOptions) error {
	p, err := jsonOf(payload)
	if err != nil {
		return err
	}
	args := []string{"$1::text", "$2::text", "$3::text", "$4::jsonb"}
	vals := []any{name, schedule, kind, p}
	if o := opts; o != nil {
		add := func(ok bool, arg, cast string, v any) {
			if ok {
				vals = append(vals, v)
				args = append(args, fmt.Sprintf("%s => $%d%s", arg, len(vals), cast))
			}
		}
		add(o.Timezone != "", "timezone", "::text", o.Timezone)
		add(o.Disabled, "enabled", "::boolean", false)
		add(o.Queue != "", "queue", "::text", o.Queue)
		add(o.Priority != 0, "priority", "::integer", o.Priority)
		add(o.MaxAttempts != 0, "max_attempts", "::integer", o.MaxAttempts)
		add(o.Timeout != 0, "timeout", "::interval", o.Timeout)
		add(o.LockKey != "", "lock_key", "::text", o.LockKey)
		add(o.ConcurrencyKey != "", "concurrency_key", "::text", o.ConcurrencyKey)
		add(o.RequiredCaps != nil, "required_caps", "::text[]", o.RequiredCaps)
		add(o.Budgets != nil, "budgets", "::text[]", o.Budgets)
		if o.Cost != nil {
			add(true, "cost", "::numeric", strconv.FormatFloat(*o.Cost, 'g', -1, 64))
		}
	}
	_, err = scalar[string](ctx, db, "SELECT schedq.schedule("+strings.Join(args, ", ")+")", vals...)
	return err
}

// Unschedule removes a periodic task; false if there is none by that name.
func Unschedule(ctx context.Context, db DB, name string) (bool, error) {
	return scalar[bool](ctx, db, "SELECT schedq.unschedule($1)", name)
}

// SetScheduleEnabled enables or disables a periodic task; false if there
// is none by that name.
func SetScheduleEnabled(ctx context.Context, db DB, name string, enabled bool) (bool, error) {
	return scalar[bool](ctx, db, "SELECT schedq.set_schedule_enabled($1, $2)", name, enabled)
}

// CreateRun starts a workflow run (tasks join it with SubmitOptions.RunID)
// and returns its id.  failurePolicy is "halt" or "continue" ("" is
// "halt"); name may be "".
func CreateRun(ctx context.Context, db DB, name, failurePolicy string) (int64, error) {
	if failurePolicy == "" {
		failurePolicy = "halt"
	}
	var n *string
	if name != "" {
		n = &name
	}
	return scalar[int64](ctx, db, "SELECT schedq.create_run($1, $2)", n, failurePolicy)
}

// CancelRun cancels every unfinished task of a run, and the run; false for
// a finished or missing run.
func CancelRun(ctx context.Context, db DB, runID int64) (bool, error) {
	return scalar[bool](ctx, db, "SELECT schedq.cancel_run($1)", runID)
}

// Cancel cancels a task that is not finished; false for a finished or
// missing task.
func Cancel(ctx context.Context, db DB, taskID int64) (bool, error) {
	return scalar[bool](ctx, db, "SELECT schedq.cancel($1)", taskID)
}

// Retry runs a finished task again; false for a live or missing task.
func Retry(ctx context.Context, db DB, taskID int64) (bool, error) {
	return scalar[bool](ctx, db, "SELECT schedq.retry($1)", taskID)
}

// PauseQueue stops claims from queue.
func PauseQueue(ctx context.Context, db DB, queue string) error {
	_, err := db.Exec(ctx, "SELECT schedq.pause_queue($1)", queue)
	return wrap(err)
}

// ResumeQueue allows claims from a paused queue again.
func ResumeQueue(ctx context.Context, db DB, queue string) error {
	_, err := db.Exec(ctx, "SELECT schedq.resume_queue($1)", queue)
	return wrap(err)
}

// SetConcurrencyLimit lets at most maxActive tasks of concurrencyKey be
// available or running at once; nil removes the limit.
func SetConcurrencyLimit(ctx context.Context, db DB, concurrencyKey string, maxActive *int32) error {
	_, err := db.Exec(ctx, "SELECT schedq.set_concurrency_limit($1, $2)", concurrencyKey, maxActive)
	return wrap(err)
}

// CheckVersion returns the version of schedq installed in db's database,
// or an error matching ErrUnsupportedVersion if it is older than
// MinSchedqVersion or not installed.
func CheckVersion(ctx context.Context, db DB) (string, error) {
	var v string
	err := db.QueryRow(ctx, "SELECT extversion FROM pg_extension WHERE extname = 'schedq'").Scan(&v)
	if err == pgx.ErrNoRows {
		return "", fmt.Errorf("%w: schedq is not installed in this database (CREATE EXTENSION schedq)",
			ErrUnsupportedVersion)
	}
	if err != nil {
		return "", wrap(err)
	}
	if versionLess(v, MinSchedqVersion) {
		return v, fmt.Errorf("%w: schedq %s is installed; this library needs %s or later (ALTER EXTENSION schedq UPDATE)",
			ErrUnsupportedVersion, v, MinSchedqVersion)
	}
	return v, nil
}

// versionLess compares dotted versions numerically.
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// scalar runs a query of one row of one column.
func scalar[T any](ctx context.Context, db DB, sql string, args ...any) (T, error) {
	var v T
	err := db.QueryRow(ctx, sql, args...).Scan(&v)
	return v, wrap(err)
}

// column runs a query of one column.
func column[T any](ctx context.Context, db DB, sql string, args ...any) ([]T, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, wrap(err)
		}
		out = append(out, v)
	}
	return out, wrap(rows.Err())
}
