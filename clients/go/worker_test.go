package schedq_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v4/pgxpool"
	"schedq.dev/schedq"
)

// startWorker runs a worker on a pool of its own (application_name app)
// until the test ends; outcomes are tallied by "id status".
func startWorker(t *testing.T, app string, cfg schedq.WorkerConfig, handlers map[string]schedq.Handler) (*schedq.Worker, <-chan error, *tally) {
	t.Helper()
	pool := newPool(t, app)
	outcomes := newTally()
	cfg.OnOutcome = func(o schedq.Outcome) { outcomes.add("%d %s", o.Job.ID, o.Status) }
	cfg.Logf = t.Logf
	w := schedq.NewWorker(pool, cfg)
	for k, h := range handlers {
		w.Handle(k, h)
	}
	errc := make(chan error, 1)
	ended := make(chan struct{})
	go func() {
		errc <- w.Run(context.Background())
		close(ended)
	}()
	t.Cleanup(func() {
		w.Stop()
		select {
		case <-ended:
		case <-time.After(30 * time.Second):
			w.Abort()
		}
	})
	return w, errc, outcomes
}

func submitN(t *testing.T, pool *pgxpool.Pool, n int, kind, queue string, opts *schedq.SubmitOptions) []int64 {
	t.Helper()
	tasks := make([]schedq.NewTask, n)
	o := schedq.SubmitOptions{Queue: queue}
	if opts != nil {
		o = *opts
		o.Queue = queue
	}
	for i := range tasks {
		tasks[i] = schedq.NewTask{Kind: kind, Payload: map[string]int{"i": i}, Options: &o}
	}
	ids, err := schedq.SubmitMany(context.Background(), pool, tasks)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// checkOnce: every task done, its handler run once per attempt, and
// reported done exactly once.
func checkOnce(t *testing.T, pool *pgxpool.Pool, ids []int64, runs, outcomes *tally) {
	t.Helper()
	rows, err := pool.Query(context.Background(), "SELECT id, status, attempts FROM schedq.task WHERE id = ANY($1)", ids)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var wrong []string
	for rows.Next() {
		var id int64
		var status string
		var attempts int
		if err := rows.Scan(&id, &status, &attempts); err != nil {
			t.Fatal(err)
		}
		if status != "done" || runs.get("%d", id) != attempts || outcomes.get("%d done", id) != 1 {
			wrong = append(wrong, fmt.Sprintf("task %d %s after %d attempts: %d runs, %d times done",
				id, status, attempts, runs.get("%d", id), outcomes.get("%d done", id)))
		}
	}
	if len(wrong) > 0 {
		t.Fatalf("%d tasks wrong: %s", len(wrong), strings.Join(wrong, "; "))
	}
}

func TestWorkerRunsEachTaskOnceUnderConcurrency(t *testing.T) {
	pool := newPool(t, "schedq-test")
	queue, kind := name(t, "q"), name(t, "k")
	ids := submitN(t, pool, 300, kind, queue, nil)
	runs := newTally()
	_, _, outcomes := startWorker(t, name(t, "w"), schedq.WorkerConfig{Queues: []string{queue}, Concurrency: 8},
		map[string]schedq.Handler{kind: func(ctx context.Context, j *schedq.Job) (any, error) {
			runs.add("%d", j.ID)
			time.Sleep(time.Millisecond)
			return map[string]int64{"id": j.ID}, nil
		}})
	waitFor(t, pool, time.Minute, "300", "SELECT count(*)::text FROM schedq.task WHERE id = ANY($1) AND status = 'done' AND (result->>'id')::bigint = id", ids)
	checkOnce(t, pool, ids, runs, outcomes)
}

// TestWorkerHandlersRunAtOnce: a batch's handlers start one after another
// in one goroutine only while each is quick; one that blocks hands the
// rest to goroutines of their own.  Eight handlers that each wait until
// all eight have started all finish (one after another, the first would
// wait for ever).
func TestWorkerHandlersRunAtOnce(t *testing.T) {
	pool := newPool(t, "schedq-test")
	queue, kind := name(t, "q"), name(t, "k")
	const n = 8
	var started sync.WaitGroup
	started.Add(n)
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	ids := submitN(t, pool, n, kind, queue, nil) // before the worker: one claim takes all
	startWorker(t, name(t, "w"), schedq.WorkerConfig{Queues: []string{queue}, Concurrency: n},
		map[string]schedq.Handler{kind: func(ctx context.Context, j *schedq.Job) (any, error) {
			started.Done()
			select {
			case <-all:
				return nil, nil
			case <-time.After(20 * time.Second):
				return nil, schedq.Permanent(errors.New("the other handlers did not start"))
			}
		}})
	waitFor(t, pool, time.Minute, "8 done", "SELECT count(*) || ' ' || string_agg(DISTINCT status::text, ',') FROM schedq.task WHERE id = ANY($1) AND status IN ('done', 'failed')", ids)
}

// TestWorkerOutcomeNotHeldBehindSlowHandler: a quick task of a batch is
// completed while a slow one of the same batch still runs (the claim loop
// runs a batch's handlers itself, and hands itself off behind a slow
// one): on a fresh worker, and again once it has waited idle in
// await_task long enough for its watchdog to sleep.
func TestWorkerOutcomeNotHeldBehindSlowHandler(t *testing.T) {
	pool := newPool(t, "schedq-test")
	queue, fast, slow, app := name(t, "q"), name(t, "fast"), name(t, "slow"), name(t, "w")
	var mu sync.Mutex
	release := make(chan struct{})
	gate := func() chan struct{} { mu.Lock(); defer mu.Unlock(); return release }
	submit := func() []int64 { // in one statement: one claim takes both
		ids, err := schedq.SubmitMany(context.Background(), pool, []schedq.NewTask{
			{Kind: fast, Options: &schedq.SubmitOptions{Queue: queue}}, // first in claim order
			{Kind: slow, Options: &schedq.SubmitOptions{Queue: queue}}})
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	first := submit() // before the worker starts
	startWorker(t, app, schedq.WorkerConfig{Queues: []string{queue}, Concurrency: 2},
		map[string]schedq.Handler{
			fast: func(ctx context.Context, j *schedq.Job) (any, error) { return nil, nil },
			slow: func(ctx context.Context, j *schedq.Job) (any, error) {
				select {
				case <-gate():
				case <-time.After(30 * time.Second):
				}
				return nil, nil
			}})
	for round, ids := range [][]int64{first, nil} {
		if round == 1 {
			waitFor(t, pool, 10*time.Second, "1", `SELECT count(*)::text FROM pg_stat_activity
			  WHERE application_name = $1 AND query LIKE '%await_task%' AND state = 'active'
			    AND query_start < now() - interval '300 ms'`, app)
			mu.Lock()
			release = make(chan struct{})
			mu.Unlock()
			ids = submit()
		}
		waitFor(t, pool, 10*time.Second, "done running",
			"SELECT string_agg(status::text, ' ' ORDER BY id = $2) FROM schedq.task WHERE id = ANY($1)",
			ids, ids[1])
		close(gate())
		waitFor(t, pool, 10*time.Second, "done", "SELECT status::text FROM schedq.task WHERE id = $1", ids[1])
	}
}

// TestWorkerAbortInterruptsTheClaim: Abort ends a claim statement that
// waits on the server (here behind a lock of the task table), so that Run
// returns and the worker's pool closes at once rather than when the lock
// goes (the claim loop's statement runs without a cancelable context).
func TestWorkerAbortInterruptsTheClaim(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, "schedq-test")
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "LOCK TABLE schedq.task IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	app := name(t, "w")
	wpool := newPool(t, app)
	w := schedq.NewWorker(wpool, schedq.WorkerConfig{Queues: []string{name(t, "q")}, Concurrency: 2, Logf: t.Logf})
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	waitFor(t, pool, 10*time.Second, "1",
		"SELECT count(*)::text FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'", app)
	w.Abort()
	select {
	case err := <-errc:
		if !errors.Is(err, schedq.ErrAborted) {
			t.Fatalf("Run returned %v after Abort", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5 s of Abort")
	}
	closed := make(chan struct{})
	go func() { wpool.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the worker's pool did not close within 5 s of Abort: its claim still runs")
	}
}

func TestWorkerSurvivesLostConnections(t *testing.T) {
	pool := newPool(t, "schedq-test")
	queue, kind, app := name(t, "q"), name(t, "k"), name(t, "w")
	ids := submitN(t, pool, 400, kind, queue, nil)
	runs := newTally()
	_, errc, outcomes := startWorker(t, app, schedq.WorkerConfig{Queues: []string{queue}, Concurrency: 8, Lease: 3 * time.Second},
		map[string]schedq.Handler{kind: func(ctx context.Context, j *schedq.Job) (any, error) {
			runs.add("%d", j.ID)
			time.Sleep(5 * time.Millisecond)
			return nil, nil
		}})
	for i := 0; i < 4; i++ {
		time.Sleep(300 * time.Millisecond)
		run(t, pool, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", app)
	}
	waitFor(t, pool, 2*time.Minute, "400", "SELECT count(*)::text FROM schedq.task WHERE id = ANY($1) AND status = 'done'", ids)
	select {
	case err := <-errc:
		t.Fatalf("the worker stopped: %v", err)
	default:
	}
	checkOnce(t, pool, ids, runs, outcomes)
}

func TestWorkerRetriesWithBackoff(t *testing.T) {
	pool := newPool(t, "schedq-test")
	queue, kind := name(t, "q"), name(t, "k")
	ids := submitN(t, pool, 3, kind, queue, &schedq.SubmitOptions{MaxAttempts: 3})
	_, _, outcomes := startWorker(t, name(t, "w"), schedq.WorkerConfig{Queues: []string{queue}},
		map[string]schedq.Handler{kind: schedq.Typed(func(ctx context.Context, j *schedq.Job, p struct{ I int }) (any, error) {
			switch {
			case p.I == 0 && j.Attempt == 1:
				return nil, errors.New("temporary trouble")
			case p.I == 1:
				return nil, schedq.Permanent(errors.New("bad input: never"))
			case p.I == 2 && j.Attempt == 1:
				return nil, schedq.RetryAfter(errors.New("come back later"), 2*time.Second)
			}
			return j.Attempt, nil
		})})
	waitFor(t, pool, time.Minute, "failed 1 bad input: never", "SELECT concat_ws(' ', status, attempts, last_error) FROM schedq.task WHERE id = $1", ids[1])
	// The first failure: schedq's backoff, 1 s.
	waitFor(t, pool, time.Minute, "done 2 temporary trouble 2", "SELECT concat_ws(' ', status, attempts, last_error, result) FROM schedq.task WHERE id = $1", ids[0])
	waitFor(t, pool, time.Minute, "done 2", "SELECT concat_ws(' ', status, attempts) FROM schedq.task WHERE id = $1", ids[2])
	if gap := one[float64](t, pool, "SELECT extract(epoch FROM started_at - created_at) FROM schedq.task WHERE id = $1", ids[2]); gap < 2 {
		t.Fatalf("RetryAfter(2 s): the second attempt started %.2f s after the submit", gap)
	}
	if outcomes.get("%d retry", ids[0]) != 1 || outcomes.get("%d failed", ids[1]) != 1 || outcomes.get("%d retry", ids[2]) != 1 {
		t.Fatalf("outcomes %v", outcomes.n)
	}
}

func TestWorkerProgressIsVisible(t *testing.T) {
	pool := newPool(t, "schedq-test")
	queue, kind := name(t, "q"), name(t, "k")
	ids := submitN(t, pool, 1, kind, queue, nil)
	release := make(chan struct{})
	startWorker(t, name(t, "w"), schedq.WorkerConfig{Queues: []string{queue}},
		map[string]schedq.Handler{kind: func(ctx context.Context, j *schedq.Job) (any, error) {
			if err := j.Progress(ctx, 42.5, "half way"); err != nil {
				return nil, err
			}
			<-release
			return nil, nil
		}})
	waitFor(t, pool, 30*time.Second, "running 42.5 half way", "SELECT concat_ws(' ', status, progress, progress_note) FROM schedq.task WHERE id = $1", ids[0])
	close(release)
	// a handler that returns nil leaves the result NULL (not JSON null)
	waitFor(t, pool, 30*time.Second, "done t", "SELECT concat_ws(' ', status, result IS NULL) FROM schedq.task WHERE id = $1", ids[0])
}

func TestWorkerHeartbeatsKeepTheLease(t *testing.T) {
	pool := newPool(t, "schedq-test")
	queue, kind := name(t, "q"), name(t, "k")
	ids := submitN(t, pool, 1, kind, queue, nil)
	startWorker(t, name(t, "w"), schedq.WorkerConfig{Queues: []string{queue}, Lease: 1500 * time.Millisecond},
		map[string]schedq.Handler{kind: func(ctx context.Context, j *schedq.Job) (any, error) {
			select {
			case <-time.After(5 * time.Second):
				return "slept", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}})
	waitFor(t, pool, 30*time.Second, "done 1 slept", "SELECT concat_ws(' ', status, attempts, result #>> '{}') FROM schedq.task WHERE id = $1", ids[0])
}

func TestWorkerCanceledTaskIsStale(t *testing.T) {
	pool := newPool(t, "schedq-test")
	queue, kind := name(t, "q"), name(t, "k")
	ids := submitN(t, pool, 1, kind, queue, nil)
	stopped := make(chan error, 1)
	_, _, outcomes := startWorker(t, name(t, "w"), schedq.WorkerConfig{Queues: []string{queue}, Lease: 900 * time.Millisecond},
		map[string]schedq.Handler{kind: func(ctx context.Context, j *schedq.Job) (any, error) {
			<-ctx.Done() // canceled once the heartbeat finds the task canceled
			stopped <- ctx.Err()
			return "too late", nil
		}})
	waitFor(t, pool, 30*time.Second, "running", "SELECT status FROM schedq.task WHERE id = $1", ids[0])
	if ok, err := schedq.Cancel(context.Background(), pool, ids[0]); !ok || err != nil {
		t.Fatalf("Cancel: %v %v", ok, err)
	}
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's context was not canceled")
	}
	deadline := time.Now().Add(10 * time.Second)
	for outcomes.get("%d stale", ids[0]) != 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if outcomes.get("%d stale", ids[0]) != 1 || outcomes.get("%d done", ids[0]) != 0 {
		t.Fatalf("outcomes %v, want stale", outcomes.n)
	}
	if s := one[string](t, pool, "SELECT status FROM schedq.task WHERE id = $1", ids[0]); s != "canceled" {
		t.Fatalf("status %s", s)
	}
}

func TestCompleteTxExactlyOnce(t *testing.T) {
	pool := newPool(t, "schedq-test")
	queue, kind := name(t, "q"), name(t, "k")
	table := name(t, "effect")
	run(t, pool, "CREATE TABLE "+table+" (task_id bigint PRIMARY KEY)")
	// i 0: writes and completes in its transaction; i 1: writes,
	// completes, then fails (its transaction rolls back): neither.
	ids := submitN(t, pool, 2, kind, queue, &schedq.SubmitOptions{MaxAttempts: 1})
	again := make(chan error, 1)
	_, _, outcomes := startWorker(t, name(t, "w"), schedq.WorkerConfig{Queues: []string{queue}},
		map[string]schedq.Handler{kind: schedq.Typed(func(ctx context.Context, j *schedq.Job, p struct{ I int }) (any, error) {
			tx, err := pool.Begin(ctx)
			if err != nil {
				return nil, err
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, "INSERT INTO "+table+" VALUES ($1)", j.ID); err != nil {
				return nil, err
			}
			if err := j.CompleteTx(ctx, tx, map[string]bool{"own": true}); err != nil {
				return nil, err
			}
			if p.I == 1 {
				return nil, errors.New("raised after its write")
			}
			if err := tx.Commit(ctx); err != nil {
				return nil, err
			}
			again <- j.CompleteTx(ctx, pool, nil) // the token is spent now
			return nil, nil
		})})
	waitFor(t, pool, 30*time.Second, "done true 1", `SELECT concat_ws(' ', status, result->>'own',
		(SELECT count(*) FROM `+table+` WHERE task_id = t.id)) FROM schedq.task t WHERE id = $1`, ids[0])
	waitFor(t, pool, 30*time.Second, "failed raised after its write 0", `SELECT concat_ws(' ', status, last_error,
		(SELECT count(*) FROM `+table+` WHERE task_id = t.id)) FROM schedq.task t WHERE id = $1`, ids[1])
	if outcomes.get("%d done", ids[0]) != 1 || outcomes.get("%d failed", ids[1]) != 1 {
		t.Fatalf("outcomes %v", outcomes.n)
	}
	if err := <-again; !errors.Is(err, schedq.ErrStaleToken) {
		t.Fatalf("CompleteTx with a spent token: %v, want ErrStaleToken", err)
	}
}

func TestWorkerWaitsInAwaitTaskAndStops(t *testing.T) {
	pool := newPool(t, "schedq-test")
	queue, kind, app := name(t, "q"), name(t, "k"), name(t, "w")
	w, errc, _ := startWorker(t, app, schedq.WorkerConfig{Queues: []string{queue}, Wait: time.Minute},
		map[string]schedq.Handler{kind: func(ctx context.Context, j *schedq.Job) (any, error) { return nil, nil }})
	waiting := "SELECT (count(*) > 0)::text FROM pg_stat_activity WHERE application_name = $1 AND state = 'active' AND query LIKE 'CALL schedq.await_task%'"
	waitFor(t, pool, 30*time.Second, "true", waiting, app)
	ids := submitN(t, pool, 1, kind, queue, nil)
	waitFor(t, pool, 5*time.Second, "done", "SELECT status FROM schedq.task WHERE id = $1", ids[0])
	waitFor(t, pool, 30*time.Second, "true", waiting, app)
	t0 := time.Now()
	w.Stop()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not end the wait")
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("stopping took %v", d)
	}
}

// TestHelperWorkerProcess is the worker of TestWorkerSIGTERM, run as a
// child process (it does nothing in the test run itself).
func TestHelperWorkerProcess(t *testing.T) {
	queue := os.Getenv("SCHEDQ_HELPER_QUEUE")
	if queue == "" {
		return
	}
	cfg, _ := pgxpool.ParseConfig(os.Getenv("SCHEDQ_TEST_DSN"))
	pool, err := pgxpool.ConnectConfig(context.Background(), cfg)
	if err != nil {
		os.Exit(3)
	}
	w := schedq.NewWorker(pool, schedq.WorkerConfig{Queues: []string{queue}, Concurrency: 3, HandleSignals: true,
		OnOutcome: func(o schedq.Outcome) { fmt.Printf("outcome %d %s\n", o.Job.ID, o.Status) }})
	w.Handle("nap", func(ctx context.Context, j *schedq.Job) (any, error) {
		fmt.Printf("run %d\n", j.ID)
		time.Sleep(1500 * time.Millisecond)
		return nil, nil
	})
	err = w.Run(context.Background())
	pool.Close()
	if errors.Is(err, schedq.ErrAborted) {
		os.Exit(7)
	}
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	os.Exit(0)
}

func TestWorkerSIGTERM(t *testing.T) {
	pool := newPool(t, "schedq-test")
	for _, signals := range []int{1, 2} {
		queue := name(t, "q"+strconv.Itoa(signals))
		ids := submitN(t, pool, 5, "nap", queue, nil)
		var out strings.Builder
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWorkerProcess$")
		cmd.Env = append(os.Environ(), "SCHEDQ_HELPER_QUEUE="+queue)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, pool, 30*time.Second, "3", "SELECT count(*)::text FROM schedq.task WHERE id = ANY($1) AND status = 'running'", ids)
		for i := 0; i < signals; i++ {
			cmd.Process.Signal(syscall.SIGTERM)
			time.Sleep(50 * time.Millisecond)
		}
		after := submitN(t, pool, 1, "nap", queue, nil)
		err := cmd.Wait()
		code := cmd.ProcessState.ExitCode()
		counts := one[string](t, pool, "SELECT concat_ws(' ', count(*) FILTER (WHERE status = 'done'), count(*) FILTER (WHERE status = 'running'), count(*) FILTER (WHERE status = 'available')) FROM schedq.task WHERE queue = $1", queue)
		if signals == 1 {
			// Drained: the three in hand done, nothing more claimed.
			if code != 0 || counts != "3 0 3" {
				t.Fatalf("SIGTERM: exit %d (%v), done/running/available %s, want 0 and 3 0 3\n%s", code, err, counts, out.String())
			}
			for _, id := range ids {
				runs, dones := strings.Count(out.String(), fmt.Sprintf("run %d\n", id)), strings.Count(out.String(), fmt.Sprintf("outcome %d done\n", id))
				if runs != dones || runs > 1 {
					t.Fatalf("task %d: %d runs, %d done\n%s", id, runs, dones, out.String())
				}
			}
		} else {
			// Aborted: exits at once, the three left running to the reaper.
			if code != 7 || counts != "0 3 3" {
				t.Fatalf("two SIGTERMs: exit %d (%v), done/running/available %s, want 7 and 0 3 3\n%s", code, err, counts, out.String())
			}
		}
		if s := one[string](t, pool, "SELECT status FROM schedq.task WHERE id = $1", after[0]); s != "available" {
			t.Fatalf("a task submitted after the signal is %s", s)
		}
	}
}

func TestTypedBadPayloadFailsPermanently(t *testing.T) {
	pool := newPool(t, "schedq-test")
	queue, kind := name(t, "q"), name(t, "k")
	id, err := schedq.Submit(context.Background(), pool, kind, map[string]string{"n": "not a number"},
		&schedq.SubmitOptions{Queue: queue})
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, name(t, "w"), schedq.WorkerConfig{Queues: []string{queue}},
		map[string]schedq.Handler{kind: schedq.Typed(func(ctx context.Context, j *schedq.Job, p struct{ N int }) (any, error) {
			return p.N, nil
		})})
	waitFor(t, pool, 30*time.Second, "failed 1 t", "SELECT concat_ws(' ', status, attempts, last_error LIKE 'bad input: json: cannot unmarshal%') FROM schedq.task WHERE id = $1", id)
}
