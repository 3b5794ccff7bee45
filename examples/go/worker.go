// A schedq worker in Go, on the client library in clients/go (pgx v4).
//
//	mkdir -p gopath/src/schedq.dev && ln -s "$PWD/clients/go" gopath/src/schedq.dev/schedq
//	GO111MODULE=off GOPATH=$PWD/gopath:/usr/share/gocode go build -o schedq-worker examples/go/worker.go
//	PGHOST=... PGUSER=worker SCHEDQ_QUEUES=default ./schedq-worker
//
// Copy it into your application and replace the handlers with your own.
// The library does the protocol: one claim loop completing the finished
// tasks and claiming the next ones in one statement, await_task when idle,
// heartbeats, fail with the error, reconnecting (clients/go/README.md).
//
// Settings, from the environment: the connection the libpq way (PGHOST,
// PGPORT, PGUSER, PGDATABASE, PGPASSWORD or ~/.pgpass, PGSERVICE,
// PGTARGETSESSIONATTRS ...), or a conninfo string or URI in SCHEDQ_DSN;
// SCHEDQ_QUEUES and SCHEDQ_CAPS, comma lists (default: every queue, no
// capability); SCHEDQ_CONCURRENCY, handlers at once (10); SCHEDQ_BATCH,
// most tasks per claim (10); SCHEDQ_LEASE, seconds (30); SCHEDQ_WAIT,
// longest await_task, seconds (30); SCHEDQ_WORKER, the name recorded in
// claimed_by (host:pid).
//
// SIGTERM or SIGINT: finish the tasks in hand, claim no more, exit 0; a
// second signal exits at once (exit 1; the reaper takes the tasks back
// after their lease).  One line per attempt on stdout.  The first
// connection fails: one line on stderr, exit 3; a privilege is missing:
// exit 4 (as schedqctl).  Through PgBouncer in transaction mode: no named
// prepared statement is kept (statement_cache_mode describe).
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgconn/stmtcache"
	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
	"schedq.dev/schedq"
)

type add struct{ Numbers []float64 }
type sleep struct{ Seconds *float64 }

func main() {
	log.SetFlags(0)
	log.SetOutput(os.Stdout)
	pool := connect()
	w := schedq.NewWorker(pool, schedq.WorkerConfig{
		Name: os.Getenv("SCHEDQ_WORKER"), Queues: list("SCHEDQ_QUEUES"), Caps: list("SCHEDQ_CAPS"),
		Concurrency: num("SCHEDQ_CONCURRENCY", 10), BatchSize: num("SCHEDQ_BATCH", 10),
		Lease: secs("SCHEDQ_LEASE", 30), Wait: secs("SCHEDQ_WAIT", 30),
		HandleSignals: true, OnOutcome: logOutcome,
	})
	w.Handle("add", schedq.Typed(addNumbers))
	w.Handle("flaky", flaky)
	w.Handle("sleep", schedq.Typed(sleepFor))
	err := w.Run(context.Background())
	pool.Close()
	exit(err)
}

func addNumbers(_ context.Context, _ *schedq.Job, in add) (any, error) {
	if in.Numbers == nil {
		return nil, schedq.Permanent(errors.New(`bad input: add needs {"numbers": [n, ...]}`))
	}
	sum := 0.0
	for _, n := range in.Numbers {
		sum += n
	}
	return map[string]float64{"sum": sum}, nil
}

func flaky(_ context.Context, job *schedq.Job) (any, error) {
	if job.Attempt == 1 {
		return nil, errors.New("flaky: the first attempt always fails")
	}
	return map[string]int32{"attempt": job.Attempt}, nil
}

func sleepFor(ctx context.Context, _ *schedq.Job, in sleep) (any, error) {
	if in.Seconds == nil || *in.Seconds < 0 || *in.Seconds > 3600 {
		return nil, schedq.Permanent(errors.New(`bad input: sleep needs {"seconds": 0..3600}`))
	}
	select {
	case <-time.After(time.Duration(*in.Seconds * float64(time.Second))):
		return map[string]float64{"slept": *in.Seconds}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// connect makes the pool (connecting lazily: Run connects first).
func connect() *pgxpool.Pool {
	config, err := pgxpool.ParseConfig(os.Getenv("SCHEDQ_DSN"))
	if err != nil {
		fatal(1, err.Error())
	}
	config.LazyConnect = true
	config.MaxConns = 4 // the claim loop, await_task, heartbeats, progress
	config.ConnConfig.RuntimeParams["application_name"] = "schedq-worker"
	config.ConnConfig.BuildStatementCache = func(conn *pgconn.PgConn) stmtcache.Cache {
		return stmtcache.New(conn, stmtcache.ModeDescribe, 512)
	}
	config.AfterConnect = func(_ context.Context, conn *pgx.Conn) error {
		addr := conn.PgConn().Conn().RemoteAddr().String()
		if i := strings.LastIndex(addr, "/.s.PGSQL."); i >= 0 { // a socket
			addr = addr[:i] + ":" + addr[i+len("/.s.PGSQL."):]
		}
		log.Printf("schedq-worker: connected to %s", addr)
		return nil
	}
	pool, err := pgxpool.ConnectConfig(context.Background(), config)
	if err != nil {
		fatal(1, err.Error())
	}
	return pool
}

func logOutcome(o schedq.Outcome) {
	line := fmt.Sprintf("task=%d kind=%s attempt=%d outcome=%s ms=%d",
		o.Job.ID, o.Job.Kind, o.Job.Attempt, o.Status, o.Duration.Milliseconds())
	if o.Err != nil {
		line += " error=" + strconv.Quote(o.Err.Error())
	}
	log.Print(line)
}

// exit ends the worker as schedqctl would.
func exit(err error) {
	var pgErr *pgconn.PgError
	reason := fmt.Sprint(err)
	if errors.As(err, &pgErr) {
		reason = pgErr.Message
	}
	switch {
	case err == nil:
		log.Print("schedq-worker: stopped")
		os.Exit(0)
	case errors.Is(err, schedq.ErrCannotConnect):
		fatal(3, "could not connect: "+reason)
	case errors.Is(err, schedq.ErrPermissionDenied) || pgErr != nil && pgErr.Code == "3F000":
		fatal(4, "missing privilege: "+reason+" (see docs/security.md#roles)")
	}
	fatal(1, reason)
}

func fatal(code int, message string) {
	fmt.Fprintf(os.Stderr, "schedq-worker: %s\n", message)
	os.Exit(code)
}

func list(name string) (l []string) {
	for _, v := range strings.Split(os.Getenv(name), ",") {
		if v = strings.TrimSpace(v); v != "" {
			l = append(l, v)
		}
	}
	return l
}

func num(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

func secs(name string, def float64) time.Duration {
	if f, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil {
		def = f
	}
	return time.Duration(def * float64(time.Second))
}
