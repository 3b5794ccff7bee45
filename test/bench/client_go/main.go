// client_go: the benchmark program of test/bench/client_go.sh.  Drains n
// no-op tasks with 8 handlers in one process, either through the client
// library (-mode lib: schedq.Worker, Concurrency 8, batches of 8) or
// through the same statements without it (-mode raw: one loop calling
// schedq.complete_and_claim, the library's statement with its arguments,
// with the tokens of the last batch of 8, the no-op handlers run in
// turn).  The connection comes from the environment (PGHOST, PGPORT,
// ...); with BENCH_CPUPROFILE set to a directory it writes its CPU
// profile there (MODE.pprof).  Prints its CPU time (user + system,
// milliseconds) as cpu_ms=N at the end.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v4/pgxpool"
	"schedq.dev/schedq"
)

func main() {
	mode := flag.String("mode", "lib", "lib or raw")
	n := flag.Int64("n", 10000, "tasks to drain")
	handlers := flag.Int("handlers", 8, "handlers (and tasks per claim)")
	flag.Parse()
	ctx := context.Background()
	pool, err := pgxpool.Connect(ctx, "")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer pool.Close()
	if dir := os.Getenv("BENCH_CPUPROFILE"); dir != "" {
		f, err := os.Create(dir + "/" + *mode + ".pprof")
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if *mode == "raw" {
		err = raw(ctx, pool, *handlers)
	} else {
		err = lib(ctx, pool, *handlers, *n)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The process's own CPU time, for the client's cost per task.
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		ms := (ru.Utime.Sec+ru.Stime.Sec)*1000 + (ru.Utime.Usec+ru.Stime.Usec)/1000
		fmt.Printf("cpu_ms=%d\n", ms)
	}
}

func lib(ctx context.Context, pool *pgxpool.Pool, handlers int, n int64) error {
	var done atomic.Int64
	var w *schedq.Worker
	w = schedq.NewWorker(pool, schedq.WorkerConfig{Name: "bench-lib", Concurrency: handlers,
		BatchSize: handlers, Wait: 5e9,
		OnOutcome: func(o schedq.Outcome) {
			if done.Add(1) == n {
				w.Stop()
			}
		}})
	w.Handle("noop", func(context.Context, *schedq.Job) (any, error) { return nil, nil })
	return w.Run(ctx)
}

func raw(ctx context.Context, pool *pgxpool.Pool, handlers int) error {
	// The library's statement (clients/go/claim.go), with its arguments:
	// the same columns, the worker's caps and lease.
	const claimSQL = `SELECT id, attempt, queue, kind, payload, priority, run_id,
	       lease_expires_at, token
	  FROM schedq.complete_and_claim($1::text[], $2::text, $3::text[]::jsonb[],
	       queues => $4::text[], caps => $5::text[], n => $6::integer,
	       lease => $7::interval)`
	tokens := []string{}
	results := []*string{}
	for {
		rows, err := pool.Query(ctx, claimSQL, tokens, "bench-raw", results, nil,
			[]string{}, handlers, 30*time.Second)
		if err != nil {
			return err
		}
		next := []string{}
		for rows.Next() {
			var id, attempt int64
			var priority int32
			var runID *int64
			var queue, kind, token string
			var payload []byte
			var lease time.Time
			if err := rows.Scan(&id, &attempt, &queue, &kind, &payload, &priority,
				&runID, &lease, &token); err != nil {
				return err
			}
			next = append(next, token) // the no-op handler
		}
		if err := rows.Err(); err != nil {
			return err
		}
		results = make([]*string, len(next)) // each NULL, as the library sends
		if len(next) == 0 && len(tokens) > 0 {
			tokens = next
			continue // the last completions committed; one more look
		}
		if len(next) == 0 {
			return nil
		}
		tokens = next
	}
}
