// A schedq worker in Go, with pgx v4.
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o schedq-worker worker.go
//	PGHOST=... PGUSER=worker SCHEDQ_QUEUES=default ./schedq-worker
//
// Copy it into your application and replace handlers with your own code.
//
// The protocol, in the order this loop follows it:
//
//  1. schedq.complete_and_claim(tokens, worker, ..., n, lease) hands out up
//     to n tasks (with no tokens it is schedq.claim without a wait),
//     each with a token: the signed grant of this attempt of this task.
//     Every later call about the task carries the token, from any session.
//     Grants are fenced: the token of an attempt that is no longer running
//     (its lease expired and the reaper took the task back, it was
//     canceled, it already finished) is stale, and a call with it changes
//     nothing and says so (heartbeat returns NULL, fail 'stale',
//     complete_many false).  A slow or cut-off worker can never overwrite a newer
//     attempt, and repeating a report that may or may not have reached the
//     server is safe.
//  2. Nothing to claim: CALL schedq.await_task(...) sleeps until a task this
//     worker could claim is available, or wait passes, holding no snapshot
//     and no lock (so VACUUM is not held back by idle workers); then claim
//     again, since another worker may have been quicker.  It must run
//     outside a transaction block, as a statement of its own: pgx's
//     statements outside Begin are.
//  3. While a task runs, schedq.heartbeat(token) extends its lease.  Beating
//     every third of the lease keeps it alive through a missed beat.
//  4. schedq.fail(token, error, retry_in, permanent) at once for a failure:
//     it retries the task with backoff while attempts remain (after
//     retry_in if given); permanent => true for input that can never
//     succeed.
//  5. The batch done, schedq.complete_and_claim(tokens, worker, results,
//     queues, caps, n, lease) completes its successes and claims the next
//     batch in one statement and one commit (the first call passes no
//     tokens; it is then a plain claim).  It says nothing of a stale token
//     (it changes nothing), so a task canceled after its last heartbeat is
//     logged done.  When it claims nothing, wait (step 2).  While stopping,
//     schedq.complete_many(tokens, results) completes them and claims
//     nothing.
//
// Delivery is at least once: if a worker dies mid-task, or stays cut off
// from the server longer than the lease, the reaper takes its task back when
// the lease expires and the task runs again.  Handlers must be idempotent.
//
// Settings, from the environment: the connection the libpq way (PGHOST,
// PGPORT, PGUSER, PGDATABASE, PGPASSWORD or ~/.pgpass, PGSERVICE ...), or a
// conninfo string or URI in SCHEDQ_DSN; SCHEDQ_QUEUES and SCHEDQ_CAPS, comma
// lists (default: every queue, no capability); SCHEDQ_BATCH, tasks per claim
// (10); SCHEDQ_LEASE, seconds (30); SCHEDQ_WAIT, longest await_task, seconds
// (30); SCHEDQ_WORKER, the name recorded in claimed_by (host:pid).
//
// SIGTERM or SIGINT: finish the tasks claimed, claim no more, exit 0.  A
// second signal exits at once (the reaper takes the tasks back after their
// lease).  Logs one line per attempt on stdout.
//
// Failures, as schedqctl's: the first connection fails (a wrong password,
// say): one line on stderr, exit 3.  A privilege is missing: one line, exit
// 4.  A connection lost later: reconnect after 0.1 s, doubling up to 2 s,
// each delay jittered by +-25 %, so that a restart or a failover costs
// about a second once the server takes connections again.
//
// Several servers: pgx takes libpq's multi-host strings, in SCHEDQ_DSN
// ("host=db1,db2 port=5432,5432 target_session_attrs=read-write") or in
// PGHOST, PGPORT and PGTARGETSESSIONATTRS; each new connection tries them
// in turn, and the worker logs the host and port it reached.
//
// Connection poolers (PgBouncer in transaction mode): each statement here
// is a transaction of its own, and pgx only describes statements with the
// unnamed statement (statement_cache_mode=describe), never prepares named
// ones, since the next statement may run on another server connection.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"math/rand"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgconn/stmtcache"
	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
)

// Retry is a temporary failure: try again after After, or after schedq's
// backoff (1 s, doubling, capped at an hour) when After is 0.
type Retry struct {
	Msg   string
	After time.Duration
}

func (e *Retry) Error() string { return e.Msg }

// BadInput is input that can never succeed: fail the task without retrying.
type BadInput struct{ Msg string }

func (e *BadInput) Error() string { return "bad input: " + e.Msg }

// A Handler runs one attempt of a task and returns its JSON result.  Its
// context is canceled when the task is no longer this worker's.
type Handler func(ctx context.Context, payload []byte, attempt int) (any, error)

var handlers = map[string]Handler{
	"add": func(_ context.Context, payload []byte, _ int) (any, error) {
		var in struct{ Numbers []float64 }
		if json.Unmarshal(payload, &in) != nil || in.Numbers == nil {
			return nil, &BadInput{`add needs {"numbers": [n, ...]}`}
		}
		sum := 0.0
		for _, n := range in.Numbers {
			sum += n
		}
		return map[string]float64{"sum": sum}, nil
	},
	"flaky": func(_ context.Context, _ []byte, attempt int) (any, error) {
		if attempt == 1 {
			return nil, &Retry{Msg: "flaky: the first attempt always fails"}
		}
		return map[string]int{"attempt": attempt}, nil
	},
	"sleep": func(ctx context.Context, payload []byte, _ int) (any, error) {
		var in struct{ Seconds *float64 }
		if json.Unmarshal(payload, &in) != nil || in.Seconds == nil ||
			*in.Seconds < 0 || *in.Seconds > 3600 {
			return nil, &BadInput{`sleep needs {"seconds": 0..3600}`}
		}
		select {
		case <-time.After(time.Duration(*in.Seconds * float64(time.Second))):
			return map[string]float64{"slept": *in.Seconds}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	},
}

type task struct {
	id      int64
	attempt int
	kind    string
	payload []byte
	token   string
}

// outcome is what to report: a result, or an error with how to retry.
type outcome struct {
	result    []byte
	err       string
	retryIn   *float64 // seconds; nil: schedq's backoff
	permanent bool
	ms        int64
}

type report struct {
	t   task
	out outcome
}

type worker struct {
	pool       *pgxpool.Pool
	name       string
	queues     []string // nil: every queue
	caps       []string
	batch      int
	lease      float64  // seconds
	wait       float64  // seconds
	unreported []report // failures not yet reported
	pending    []report // successes not yet completed
}

func main() {
	log.SetFlags(0)
	log.SetOutput(os.Stdout)

	// The first signal cancels ctx, which ends a wait for tasks; stop()
	// then gives signals their default action back, so a second one ends
	// the process.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	signaled := make(chan struct{})
	go func() {
		<-ctx.Done()
		stop()
		log.Print("schedq-worker: signal: finishing the tasks in hand")
		close(signaled)
	}()

	w, err := newWorker()
	if err != nil {
		fatal(1, err.Error())
	}
	defer w.pool.Close()
	// The first connection, made now: a failure ends the worker.
	conn, err := w.pool.Acquire(context.Background())
	if err != nil {
		fatal(3, "could not connect: "+reason(err))
	}
	conn.Release()
	queues := "all"
	if w.queues != nil {
		queues = strings.Join(w.queues, ",")
	}
	log.Printf("schedq-worker: %s: queues %s, batches of %d", w.name, queues, w.batch)
	if err := w.run(ctx); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && (pgErr.Code == "42501" || pgErr.Code == "3F000") {
			fatal(4, "missing privilege: "+reason(err)+" (see docs/security.md#roles)")
		}
		fatal(1, err.Error())
	}
	<-signaled // run returns only after a signal
	log.Print("schedq-worker: stopped")
}

// fatal ends the worker: one line on stderr, and schedqctl's exit status
// for it.
func fatal(code int, message string) {
	fmt.Fprintf(os.Stderr, "schedq-worker: %s\n", message)
	os.Exit(code)
}

// reason is the server's words for an error, else the error's text.
func reason(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Message
	}
	return err.Error()
}

func newWorker() (*worker, error) {
	// An empty DSN: pgx reads PGHOST, PGUSER, ... as libpq does.
	config, err := pgxpool.ParseConfig(os.Getenv("SCHEDQ_DSN"))
	if err != nil {
		return nil, err
	}
	config.MaxConns = 2 // the loop, and the heartbeats while a task runs
	config.LazyConnect = true
	config.ConnConfig.RuntimeParams["application_name"] = "schedq-worker"
	// Poolers: no named prepared statement outlives its transaction.
	config.ConnConfig.BuildStatementCache = func(conn *pgconn.PgConn) stmtcache.Cache {
		return stmtcache.New(conn, stmtcache.ModeDescribe, 512)
	}
	config.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		log.Printf("schedq-worker: connected to %s", where(conn.PgConn()))
		return nil
	}
	pool, err := pgxpool.ConnectConfig(context.Background(), config)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	w := &worker{
		pool:   pool,
		name:   envOr("SCHEDQ_WORKER", fmt.Sprintf("%s:%d", host, os.Getpid())),
		queues: envList("SCHEDQ_QUEUES"),
		caps:   envList("SCHEDQ_CAPS"),
	}
	if w.caps == nil {
		w.caps = []string{}
	}
	if w.batch, err = strconv.Atoi(envOr("SCHEDQ_BATCH", "10")); err != nil {
		return nil, fmt.Errorf("SCHEDQ_BATCH: %w", err)
	}
	if w.lease, err = strconv.ParseFloat(envOr("SCHEDQ_LEASE", "30"), 64); err != nil {
		return nil, fmt.Errorf("SCHEDQ_LEASE: %w", err)
	}
	if w.wait, err = strconv.ParseFloat(envOr("SCHEDQ_WAIT", "30"), 64); err != nil {
		return nil, fmt.Errorf("SCHEDQ_WAIT: %w", err)
	}
	return w, nil
}

// run claims and runs tasks until ctx is canceled.  Connection errors are
// retried with backoff; the pool opens a new connection by itself.
func (w *worker) run(ctx context.Context) error {
	const first, most = 100 * time.Millisecond, 2 * time.Second
	backoff := first
	for ctx.Err() == nil {
		err := w.step(ctx)
		if err == nil {
			backoff = first
			continue
		}
		if !connectionLost(err) {
			return err
		}
		if ctx.Err() != nil {
			lostReports(len(w.unreported)+len(w.pending), err)
			return nil
		}
		delay := time.Duration(float64(backoff) * (0.75 + rand.Float64()/2))
		log.Printf("schedq-worker: connection lost (%v); retrying in %.1f s", err, delay.Seconds())
		select {
		case <-time.After(delay):
		case <-ctx.Done():
		}
		if backoff *= 2; backoff > most {
			backoff = most
		}
	}
	// Stopping: complete what is done, claim nothing.
	if err := w.completeMany(); err != nil {
		if !connectionLost(err) {
			return err
		}
		lostReports(len(w.pending), err)
	}
	return nil
}

// step sends the reports a lost connection cut off, then claims a batch and
// runs it, or waits for a task.
func (w *worker) step(ctx context.Context) error {
	// A token works from any session, and a stale one changes nothing.
	for len(w.unreported) > 0 {
		r := w.unreported[0]
		if err := w.report(r.t, r.out); err != nil {
			return err
		}
		w.unreported = w.unreported[1:]
	}

	// Complete the successes of the last batch and claim the next one: one
	// statement, one commit.  Not ctx: it must not be canceled once it may
	// have committed.  Sent again after a lost connection.
	tokens, results := w.pendingArrays()
	rows, err := w.pool.Query(context.Background(),
		`SELECT id, attempt, kind, payload, token
		   FROM schedq.complete_and_claim($1::text[], $2, $3::text[]::jsonb[],
		        queues => $4::text[], caps => $5::text[], n => $6,
		        lease => make_interval(secs => $7))`,
		tokens, w.name, results, w.queues, w.caps, w.batch, w.lease)
	if err != nil {
		return err
	}
	var tasks []task
	for rows.Next() {
		var t task
		if err := rows.Scan(&t.id, &t.attempt, &t.kind, &t.payload, &t.token); err != nil {
			rows.Close()
			return err
		}
		tasks = append(tasks, t)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, r := range w.pending {
		logTask(r.t, "done", r.out.ms, "")
	}
	w.pending = nil
	if len(tasks) > 0 {
		return w.runBatch(tasks)
	}

	// ctx: a signal cancels the wait (pgx sends the server a cancel).
	_, err = w.pool.Exec(ctx,
		`CALL schedq.await_task(queues => $1::text[], caps => $2::text[],
		                        wait => make_interval(secs => $3))`,
		w.queues, w.caps, w.wait)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// pendingArrays: the tokens and results of the successes not yet completed.
func (w *worker) pendingArrays() ([]string, []string) {
	tokens := make([]string, 0, len(w.pending)) // not nil: NULL is refused
	results := make([]string, 0, len(w.pending))
	for _, r := range w.pending {
		tokens = append(tokens, r.t.token)
		results = append(results, string(r.out.result))
	}
	return tokens, results
}

// completeMany completes the pending successes and claims nothing.
func (w *worker) completeMany() error {
	if len(w.pending) == 0 {
		return nil
	}
	tokens, results := w.pendingArrays()
	var oks []bool
	err := w.pool.QueryRow(context.Background(),
		`SELECT schedq.complete_many($1::text[], $2::text[]::jsonb[])`,
		tokens, results).Scan(&oks)
	if err != nil {
		return err
	}
	for i, r := range w.pending {
		status := "stale"
		if i < len(oks) && oks[i] {
			status = "done"
		}
		logTask(r.t, status, r.out.ms, "")
	}
	w.pending = nil
	return nil
}

// inflight maps the tokens of a batch not yet reported to the cancel
// functions of their handlers' contexts.
type inflight struct {
	mu   sync.Mutex
	live map[string]context.CancelFunc
}

func (f *inflight) tokens() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	tokens := make([]string, 0, len(f.live))
	for token := range f.live {
		tokens = append(tokens, token)
	}
	return tokens
}

func (f *inflight) has(token string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.live[token]
	return ok
}

func (f *inflight) drop(token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cancel, ok := f.live[token]; ok {
		cancel()
		delete(f.live, token)
	}
}

func (w *worker) runBatch(tasks []task) error {
	f := &inflight{live: make(map[string]context.CancelFunc)}
	ctxs := make([]context.Context, len(tasks))
	for i, t := range tasks {
		ctxs[i], f.live[t.token] = context.WithCancel(context.Background())
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.heartbeat(f, done)
	}()
	defer func() {
		close(done)
		wg.Wait()
		for _, t := range tasks {
			f.drop(t.token)
		}
	}()

	for i, t := range tasks {
		if ctxs[i].Err() != nil {
			logTask(t, "stale", 0, "") // taken back before we got to it
			continue
		}
		start := time.Now()
		out := handle(ctxs[i], t)
		out.ms = time.Since(start).Milliseconds()
		if out.result != nil {
			w.pending = append(w.pending, report{t, out}) // still heartbeaten
			continue
		}
		if err := w.report(t, out); err != nil {
			w.unreported = append(w.unreported, report{t, out})
			return err
		}
		f.drop(t.token)
	}
	// Those the heartbeat found no longer ours: not completed.
	kept := w.pending[:0]
	for _, r := range w.pending {
		if f.has(r.t.token) {
			kept = append(kept, r)
		} else {
			logTask(r.t, "stale", r.out.ms, "")
		}
	}
	w.pending = kept
	return nil
}

// heartbeat extends the leases of the batch's live tokens every third of
// the lease until done is closed, and cancels the handlers of tasks that
// are no longer this worker's.
func (w *worker) heartbeat(f *inflight, done <-chan struct{}) {
	ticker := time.NewTicker(time.Duration(w.lease * float64(time.Second) / 3))
	defer ticker.Stop()
	for {
		select {
		case <-done:
			return
		case <-ticker.C:
		}
		tokens := f.tokens()
		if len(tokens) == 0 {
			continue
		}
		rows, err := w.pool.Query(context.Background(),
			`SELECT t, schedq.heartbeat(t) FROM unnest($1::text[]) AS t`, tokens)
		if err != nil {
			log.Printf("schedq-worker: heartbeat failed: %v", err)
			continue
		}
		for rows.Next() {
			var token string
			var expires *time.Time
			if rows.Scan(&token, &expires) == nil && expires == nil {
				f.drop(token) // no longer ours: stop its handler
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			log.Printf("schedq-worker: heartbeat failed: %v", err)
		}
	}
}

// handle runs the handler of the task's kind and says what to report.
func handle(ctx context.Context, t task) outcome {
	h, ok := handlers[t.kind]
	if !ok {
		return outcome{err: fmt.Sprintf("bad input: no handler for kind %q", t.kind), permanent: true}
	}
	result, err := h(ctx, t.payload, t.attempt)
	if err == nil {
		if b, jerr := json.Marshal(result); jerr != nil {
			err = jerr
		} else {
			return outcome{result: b}
		}
	}
	var bad *BadInput
	var retry *Retry
	switch {
	case errors.As(err, &bad):
		return outcome{err: err.Error(), permanent: true}
	case errors.As(err, &retry) && retry.After > 0:
		s := retry.After.Seconds()
		return outcome{err: err.Error(), retryIn: &s}
	default: // a bug or an outage: retry with backoff
		return outcome{err: err.Error()}
	}
}

func (w *worker) report(t task, out outcome) error {
	var status string
	err := w.pool.QueryRow(context.Background(),
		`SELECT schedq.fail($1, $2, retry_in => make_interval(secs => $3),
		                    permanent => $4)`,
		t.token, out.err, out.retryIn, out.permanent).Scan(&status)
	if err != nil {
		return err
	}
	// 'pending' or 'available': it will run again; 'failed': it won't.
	if status != "failed" && status != "stale" {
		status = "retry"
	}
	logTask(t, status, out.ms, out.err)
	return nil
}

// connectionLost says whether err is worth retrying on a new connection:
// the connection broke, the server is going away or busy, or it refused a
// new connection (the first one's failure ends the worker in main).
// Anything else (a missing GRANT, say) stops the worker.
func connectionLost(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "40", "53", "57":
			return true
		case "28": // a new connection refused: retried, as a lost one is
			return true
		}
		return false
	}
	return true
}

// where is the host and port a connection reached: the server's address
// (host:port), or for a Unix-domain socket its directory and port.
func where(c *pgconn.PgConn) string {
	addr := c.Conn().RemoteAddr().String()
	if i := strings.LastIndex(addr, "/.s.PGSQL."); i >= 0 {
		return addr[:i] + ":" + addr[i+len("/.s.PGSQL."):]
	}
	return addr
}

// lostReports says that the worker stops with outcomes it could not report.
func lostReports(n int, err error) {
	if n > 0 {
		log.Printf("schedq-worker: stopping with %d outcomes not reported (%v):"+
			" their tasks run again after their lease", n, err)
	}
}

func logTask(t task, outcome string, ms int64, errText string) {
	line := fmt.Sprintf("task=%d kind=%s attempt=%d outcome=%s ms=%d",
		t.id, t.kind, t.attempt, outcome, ms)
	if errText != "" {
		line += " error=" + strconv.Quote(errText)
	}
	log.Print(line)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envList(name string) []string {
	var list []string
	for _, v := range strings.Split(os.Getenv(name), ",") {
		if v = strings.TrimSpace(v); v != "" {
			list = append(list, v)
		}
	}
	return list
}
