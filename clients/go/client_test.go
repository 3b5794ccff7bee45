package schedq_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
	"schedq.dev/schedq"
)

// What Submit takes: a transaction, a connection or a pool.
var (
	_ schedq.DB = (pgx.Tx)(nil)
	_ schedq.DB = (*pgx.Conn)(nil)
	_ schedq.DB = (*pgxpool.Pool)(nil)
)

func TestSubmitInRolledBackTransactionCreatesNothing(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, "schedq-test")
	kind := name(t, "k")
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	id, err := schedq.Submit(ctx, tx, kind, map[string]int{"n": 1}, nil)
	if err != nil || id <= 0 {
		t.Fatalf("Submit: %d, %v", id, err)
	}
	if n := one[int](t, pool, "SELECT count(*) FROM schedq.task WHERE kind = $1", kind); n != 0 {
		t.Fatalf("before the commit another session sees %d tasks", n)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := one[int](t, pool, "SELECT count(*) FROM schedq.task WHERE kind = $1", kind); n != 0 {
		t.Fatalf("rolled back: %d tasks, want 0", n)
	}
	tx, _ = pool.Begin(ctx)
	defer tx.Rollback(ctx)
	id, err = schedq.Submit(ctx, tx, kind, map[string]int{"n": 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := one[string](t, pool, "SELECT string_agg(id || ':' || (payload->>'n'), ',') FROM schedq.task WHERE kind = $1", kind); got != itoa(id)+":2" {
		t.Fatalf("committed: tasks %q, want exactly %d:2", got, id)
	}
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

func TestSubmitOnConnAndPool(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, "schedq-test")
	kind := name(t, "k")
	conn, err := pgx.Connect(ctx, dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := schedq.Submit(ctx, conn, kind, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := schedq.Submit(ctx, pool, kind, []byte(`{"raw": true}`), nil); err != nil {
		t.Fatal(err)
	}
	if got := one[string](t, pool, "SELECT string_agg(payload::text, ' ' ORDER BY id) FROM schedq.task WHERE kind = $1", kind); got != `{} {"raw": true}` {
		t.Fatalf("payloads %q", got)
	}
}

func TestSubmitEveryOption(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, "schedq-test")
	kind := name(t, "k")
	run(t, pool, "SELECT schedq.set_budget('go_budget', 1000)")
	run, err := schedq.CreateRun(ctx, pool, "go run", "continue")
	if err != nil {
		t.Fatal(err)
	}
	dep, err := schedq.Submit(ctx, pool, kind, nil, &schedq.SubmitOptions{RunID: run})
	if err != nil {
		t.Fatal(err)
	}
	version, cost := int64(7), 2.5
	runAt := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	id, err := schedq.Submit(ctx, pool, kind, map[string]string{"a": "b"}, &schedq.SubmitOptions{
		Queue: name(t, "q"), Priority: 3, RunAt: runAt, MaxAttempts: 9,
		Timeout: 90 * time.Second, LockKey: "lk", Version: &version, ConcurrencyKey: "ck",
		RequiredCaps: []string{"gpu"}, Budgets: []string{"go_budget"}, Cost: &cost,
		RunID: run, DependsOn: []int64{dep}, DedupKey: name(t, "dk"),
	})
	if err != nil {
		t.Fatal(err)
	}
	got := one[string](t, pool, `SELECT concat_ws('|', queue, payload->>'a', priority,
		run_at = $2, max_attempts, extract(epoch FROM timeout), lock_key, version,
		concurrency_key, required_caps, budgets, cost, run_id = $3, depends_on = ARRAY[$4::bigint],
		dedup_key) FROM schedq.task WHERE id = $1`, id, runAt, run, dep)
	want := name(t, "q") + "|b|3|t|9|90.000000|lk|7|ck|{gpu}|{go_budget}|2.5|t|t|" + name(t, "dk")
	if got != want {
		t.Fatalf("task row\n got %s\nwant %s", got, want)
	}
	again, err := schedq.Submit(ctx, pool, kind, nil, &schedq.SubmitOptions{DedupKey: name(t, "dk")})
	if err != nil || again != id {
		t.Fatalf("the same dedup_key: %d, %v; want the live task %d", again, err, id)
	}
}

func TestSubmitManyAllOrNone(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, "schedq-test")
	kind := name(t, "k")
	ids, err := schedq.SubmitMany(ctx, pool, []schedq.NewTask{
		{Kind: kind, Payload: map[string]int{"i": 1}},
		{Kind: kind, Payload: map[string]int{"i": 2}, Options: &schedq.SubmitOptions{Priority: 5, Queue: name(t, "q"), Timeout: time.Minute}},
		{Kind: kind},
	})
	if err != nil || len(ids) != 3 {
		t.Fatalf("SubmitMany: %v, %v", ids, err)
	}
	got := one[string](t, pool, `SELECT string_agg(concat_ws(':', payload->>'i', priority, queue, timeout), ',' ORDER BY id)
		FROM schedq.task WHERE id = ANY($1)`, ids)
	if want := "1:0:default,2:5:" + name(t, "q") + ":00:01:00,0:default"; got != want {
		t.Fatalf("rows %q, want %q", got, want)
	}
	_, err = schedq.SubmitMany(ctx, pool, []schedq.NewTask{
		{Kind: kind + "_none"}, {Kind: kind + "_none", Options: &schedq.SubmitOptions{MaxAttempts: -1}}})
	if !errors.Is(err, schedq.ErrInvalidArgument) {
		t.Fatalf("a bad element: %v, want ErrInvalidArgument", err)
	}
	if n := one[int](t, pool, "SELECT count(*) FROM schedq.task WHERE kind = $1", kind+"_none"); n != 0 {
		t.Fatalf("a bad element: %d tasks submitted, want none", n)
	}
}

func TestErrorMapping(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, "schedq-test")
	kind := name(t, "k")
	_, err := schedq.Submit(ctx, pool, kind, nil, &schedq.SubmitOptions{MaxAttempts: -1})
	var e *schedq.Error
	if !errors.As(err, &e) || e.SQLState != "22023" || !errors.Is(err, schedq.ErrInvalidArgument) ||
		errors.Is(err, schedq.ErrNotFound) || e.Message == "" {
		t.Fatalf("max_attempts -1: %#v, want *schedq.Error 22023 matching ErrInvalidArgument", err)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "22023" {
		t.Fatalf("the driver's error is not kept: %v", err)
	}
	_, err = schedq.Submit(ctx, pool, kind, nil, &schedq.SubmitOptions{Budgets: []string{"no_such_budget"}})
	if !errors.Is(err, schedq.ErrNotFound) || err.(*schedq.Error).SQLState != "42704" {
		t.Fatalf("a missing budget: %v, want ErrNotFound (42704)", err)
	}
	_, err = schedq.Submit(ctx, pool, kind, nil, &schedq.SubmitOptions{RunID: 1 << 60})
	if !errors.Is(err, schedq.ErrForeignKeyViolation) {
		t.Fatalf("a missing run: %v, want ErrForeignKeyViolation", err)
	}
	_, err = schedq.CreateRun(ctx, pool, "", "bogus")
	if !errors.Is(err, schedq.ErrInvalidArgument) {
		t.Fatalf("an unknown failure policy: %v, want ErrInvalidArgument", err)
	}
	run(t, pool, "DROP ROLE IF EXISTS go_nobody; CREATE ROLE go_nobody")
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SET LOCAL ROLE go_nobody"); err != nil {
		t.Fatal(err)
	}
	_, err = schedq.Submit(ctx, tx, kind, nil, nil)
	if !errors.Is(err, schedq.ErrPermissionDenied) || err.(*schedq.Error).SQLState != "42501" {
		t.Fatalf("without privileges: %v, want ErrPermissionDenied (42501)", err)
	}
	if n := one[int](t, pool, "SELECT count(*) FROM schedq.task WHERE kind = $1", kind); n != 0 {
		t.Fatalf("errors submitted %d tasks", n)
	}
}

func TestManageCalls(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, "schedq-test")
	kind, queue, sched := name(t, "k"), name(t, "q"), name(t, "s")
	check := func(what string, ok bool, err error) {
		t.Helper()
		if err != nil || !ok {
			t.Fatalf("%s: %v, %v", what, ok, err)
		}
	}
	cost := 2.0
	err := schedq.Schedule(ctx, pool, sched, "*/5 * * * *", kind, map[string]int{"x": 1},
		&schedq.ScheduleOptions{Timezone: "Europe/Paris", Queue: queue, Priority: 2, Cost: &cost, Timeout: time.Minute})
	check("Schedule", true, err)
	if got := one[string](t, pool, "SELECT concat_ws('|', schedule, timezone, enabled, queue, priority, cost, payload->>'x') FROM schedq.periodic WHERE name = $1", sched); got != "*/5 * * * *|Europe/Paris|t|"+queue+"|2|2|1" {
		t.Fatalf("schedule row %q", got)
	}
	ok, err := schedq.SetScheduleEnabled(ctx, pool, sched, false)
	check("SetScheduleEnabled", ok, err)
	if one[bool](t, pool, "SELECT enabled FROM schedq.periodic WHERE name = $1", sched) {
		t.Fatal("still enabled")
	}
	ok, err = schedq.Unschedule(ctx, pool, sched)
	check("Unschedule", ok, err)
	if ok, err = schedq.Unschedule(ctx, pool, sched); ok || err != nil {
		t.Fatalf("Unschedule twice: %v, %v", ok, err)
	}

	run, err := schedq.CreateRun(ctx, pool, "manage", "")
	check("CreateRun", run > 0, err)
	inRun, _ := schedq.Submit(ctx, pool, kind, nil, &schedq.SubmitOptions{RunID: run, Queue: queue})
	ok, err = schedq.CancelRun(ctx, pool, run)
	check("CancelRun", ok, err)
	if s := one[string](t, pool, "SELECT status FROM schedq.task WHERE id = $1", inRun); s != "canceled" {
		t.Fatalf("a task of a canceled run is %s", s)
	}

	id, _ := schedq.Submit(ctx, pool, kind, nil, &schedq.SubmitOptions{Queue: queue})
	ok, err = schedq.Cancel(ctx, pool, id)
	check("Cancel", ok, err)
	ok, err = schedq.Retry(ctx, pool, id)
	check("Retry", ok, err)
	if s := one[string](t, pool, "SELECT status FROM schedq.task WHERE id = $1", id); s != "available" && s != "pending" {
		t.Fatalf("retried task is %s", s)
	}
	if ok, err = schedq.Cancel(ctx, pool, 1<<60); ok || err != nil {
		t.Fatalf("Cancel of a missing task: %v, %v", ok, err)
	}

	check("PauseQueue", true, schedq.PauseQueue(ctx, pool, queue))
	if !one[bool](t, pool, "SELECT paused FROM schedq.queue WHERE name = $1", queue) {
		t.Fatal("queue not paused")
	}
	check("ResumeQueue", true, schedq.ResumeQueue(ctx, pool, queue))
	if one[bool](t, pool, "SELECT coalesce((SELECT paused FROM schedq.queue WHERE name = $1), false)", queue) {
		t.Fatal("queue still paused")
	}
	limit := int32(3)
	check("SetConcurrencyLimit", true, schedq.SetConcurrencyLimit(ctx, pool, kind, &limit))
	if n := one[int](t, pool, "SELECT max_active FROM schedq.concurrency_limit WHERE key = $1", kind); n != 3 {
		t.Fatalf("limit %d", n)
	}
	check("SetConcurrencyLimit nil", true, schedq.SetConcurrencyLimit(ctx, pool, kind, nil))
	if n := one[int](t, pool, "SELECT count(*) FROM schedq.concurrency_limit WHERE key = $1", kind); n != 0 {
		t.Fatal("limit not removed")
	}
	sqlID, err := schedq.SubmitSQL(ctx, pool, "SELECT 1", &schedq.SubmitOptions{Queue: queue})
	check("SubmitSQL", sqlID > 0, err)
}

func TestCheckVersion(t *testing.T) {
	pool := newPool(t, "schedq-test")
	v, err := schedq.CheckVersion(context.Background(), pool)
	if err != nil || v != schedq.MinSchedqVersion {
		t.Fatalf("CheckVersion: %q, %v", v, err)
	}
}
