package schedq

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math/rand"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
)

// WorkerConfig configures a Worker.  Zero fields take the defaults shown.
type WorkerConfig struct {
	// Name is recorded in the tasks' claimed_by (host:pid).
	Name string
	// Queues to claim from (nil: every queue) and the capabilities this
	// worker has (none).
	Queues []string
	Caps   []string
	// Concurrency is how many handlers run at once (10).
	Concurrency int
	// BatchSize is the most tasks claimed in one statement (Concurrency;
	// at most 1000).
	BatchSize int
	// Lease of each claimed attempt (30 s); heartbeats extend it every
	// third of it while the handler runs.
	Lease time.Duration
	// Wait is the longest schedq.await_task when idle (30 s).
	Wait time.Duration
	// CompleteDelay is the longest a finished task's outcome waits for
	// others to be reported in the same statement while other handlers
	// still run (2 ms; negative: none).  Fewer statements and commits
	// under load, for a little latency.
	CompleteDelay time.Duration
	// HandleSignals: Run stops on SIGTERM or SIGINT (claims no more,
	// lets the running handlers finish, reports them, returns nil); a
	// second signal aborts (Run returns ErrAborted at once).
	HandleSignals bool
	// OnOutcome, if set, is called (from the claim loop) once per attempt
	// once its outcome is committed: Status "done", "retry", "failed", or
	// "stale" (the attempt was no longer this worker's: nothing changed).
	OnOutcome func(Outcome)
	// Logf logs the worker's own events (lost connections, signals);
	// log.Printf when nil.
	Logf func(format string, args ...any)
}

// Outcome is how an attempt ended.
type Outcome struct {
	Job      *Job
	Status   string // done, retry, failed or stale
	Err      error  // the handler's error, for retry and failed
	Duration time.Duration
}

// Worker runs handlers for the tasks it claims, Concurrency at once, with
// ONE claim loop: it completes the successes of the handlers that
// finished since its last call and claims tasks for the free slots in one
// statement (schedq.complete_and_claim), so a completion is done exactly
// when that statement commits.  When nothing is available it waits in
// schedq.await_task.  Heartbeats for every task in hand go in one
// statement every third of the lease.  A failed attempt is reported with
// schedq.fail (schedq retries it with its backoff).  Lost connections
// are retried with capped backoff; a token stays valid from any session,
// and a stale one changes nothing, so nothing is completed twice.
//
// Delivery is at least once: a task whose worker dies runs again after
// its lease.  A Worker runs once.
type Worker struct {
	pool     *pgxpool.Pool
	cfg      WorkerConfig
	handlers map[string]Handler

	stop, abort         chan struct{}
	stopOnce, abortOnce sync.Once

	mu   sync.Mutex
	live map[string]*inHand // by token: running, or finished and not yet reported

	// The connection the claim loop's statement runs on, while it runs
	// (see loopQuery), and whether Abort expired its deadline.
	loopMu      sync.Mutex
	loopConn    net.Conn
	loopExpired bool

	// The batch whose handlers the claim loop runs, and the watchdog's
	// sleep (see batch.go).
	inline    atomic.Pointer[batch]
	dogAsleep atomic.Bool
	dogWake   chan struct{}
}

type inHand struct {
	job    *Job
	cancel context.CancelFunc
	stale  bool // the heartbeat found the attempt no longer ours
}

// finished is a handler's return.
type finished struct {
	job    *Job
	result *string // JSON; nil: NULL
	err    error
	self   bool // completed in the handler's own transaction
	dur    time.Duration
}

// NewWorker makes a worker on pool.  The pool needs a connection for the
// claim loop, one for await_task and one for heartbeats, plus those the
// handlers use (Job.Progress): MaxConns of at least 4.
func NewWorker(pool *pgxpool.Pool, cfg WorkerConfig) *Worker {
	if cfg.Name == "" {
		host, _ := os.Hostname()
		cfg.Name = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	if cfg.Caps == nil {
		cfg.Caps = []string{}
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 10
	}
	if cfg.BatchSize <= 0 || cfg.BatchSize > cfg.Concurrency {
		cfg.BatchSize = cfg.Concurrency
	}
	if cfg.BatchSize > 1000 {
		cfg.BatchSize = 1000
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.Wait <= 0 {
		cfg.Wait = 30 * time.Second
	}
	if cfg.CompleteDelay == 0 {
		cfg.CompleteDelay = 2 * time.Millisecond
	}
	if cfg.Logf == nil {
		cfg.Logf = log.Printf
	}
	return &Worker{pool: pool, cfg: cfg, handlers: map[string]Handler{},
		stop: make(chan struct{}), abort: make(chan struct{}), dogWake: make(chan struct{}, 1),
		live: map[string]*inHand{}}
}

// Handle registers the handler of a kind.  A task of a kind without a
// handler fails permanently.  Call it before Run.
func (w *Worker) Handle(kind string, h Handler) { w.handlers[kind] = h }

// Stop asks Run to stop: claim no more, let the running handlers finish,
// report them and return nil.  Canceling Run's context does the same.
func (w *Worker) Stop() { w.stopOnce.Do(func() { close(w.stop) }) }

// Abort stops Run at once: the handlers' contexts are canceled, nothing
// more is reported (the reaper takes the tasks in hand back after their
// lease) and Run returns ErrAborted.
func (w *Worker) Abort() { w.abortOnce.Do(func() { close(w.abort) }) }

// loop is the state of Run's claim loop.
type loop struct {
	ctx       context.Context // the loop's statements': canceled by Abort
	result    chan error      // the loop's end (see ownLoop)
	needClaim bool
	done      chan finished
	ok, bad   []finished // successes to complete, failures to report
	running   int
	backoff   time.Duration
	awaiting  bool
	awaitErr  chan error
	since     time.Time   // when the oldest outcome not yet sent came
	timer     *time.Timer // for CompleteDelay
	cancelAw  context.CancelFunc
}

const firstBackoff, mostBackoff = 100 * time.Millisecond, 2 * time.Second

// Run claims and runs tasks until ctx is canceled or Stop is called, then
// drains (see Stop).  It first connects and checks schedq's version: a
// failure to connect matches ErrCannotConnect; an old schedq
// ErrUnsupportedVersion.  An error other than a lost connection (a
// missing privilege, say) stops the worker the same way and is returned.
func (w *Worker) Run(ctx context.Context) error {
	conn, err := w.pool.Acquire(ctx)
	if err != nil {
		return &connectError{err}
	}
	_, err = CheckVersion(ctx, conn)
	conn.Release()
	if err != nil {
		return err
	}
	runDone := make(chan struct{})
	defer close(runDone)
	if w.cfg.HandleSignals {
		w.signals(runDone)
	}
	go func() {
		select {
		case <-ctx.Done():
			w.Stop()
		case <-runDone:
		}
	}()
	// Statements of the loop are interrupted by Abort only: a completion
	// must not be cut off once it may have committed.
	actx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-w.abort:
			cancel()
			w.interruptLoop()
		case <-runDone:
		}
	}()
	go w.heartbeats(actx, runDone)
	go w.watchdog(runDone)

	l := &loop{ctx: actx, result: make(chan error, 1), needClaim: true,
		done: make(chan finished, w.cfg.Concurrency), backoff: firstBackoff,
		awaitErr: make(chan error, 1)}
	go w.ownLoop(l)
	var fatal error
	select {
	case fatal = <-l.result:
	case <-w.abort: // the loop may be in a handler: l is still its
		fatal = ErrAborted
	}
	if errors.Is(fatal, ErrAborted) {
		w.cancelAll()
		return ErrAborted
	}
	if l.cancelAw != nil {
		l.cancelAw()
	}
	l.timer.Stop()
	// Drain: the running handlers finish, then their outcomes are sent.
	for l.running > 0 {
		select {
		case f := <-l.done:
			l.running--
			w.sort(l, f)
		case <-w.abort:
			w.cancelAll()
			return ErrAborted
		}
	}
	for tries := 0; len(l.ok)+len(l.bad) > 0; tries++ {
		err := w.reportFailures(actx, l)
		if err == nil {
			err = w.completeMany(actx, l)
		}
		if err == nil {
			break
		}
		if !connectionLost(err) || tries == 5 || w.aborted() {
			w.cfg.Logf("schedq: stopping with %d outcomes not reported (%v): their tasks run again after their lease",
				len(l.ok)+len(l.bad), err)
			break
		}
		w.pause(l, err, nil)
	}
	return fatal
}

// errHandedOff: the claim loop goes on in another goroutine.
var errHandedOff = errors.New("schedq: claim loop handed off")

// ownLoop runs the claim loop in this goroutine until it ends (its error
// goes to l.result) or is handed to another one (runBatch).
func (w *Worker) ownLoop(l *loop) {
	if err := w.claimLoop(l); err != errHandedOff {
		l.result <- err
	}
}

// claimLoop runs until Stop (nil), Abort (ErrAborted) or an error that
// is not a lost connection (returned), or until runBatch hands it to
// another goroutine (errHandedOff).
func (w *Worker) claimLoop(l *loop) error {
	actx := l.ctx
	if l.timer == nil {
		l.timer = time.NewTimer(time.Hour)
	}
	for {
		// Collect what finished meanwhile.
		for more := true; more; {
			select {
			case f := <-l.done:
				l.running--
				w.sort(l, f)
			default:
				more = false
			}
		}
		if w.aborted() {
			return ErrAborted
		}
		if w.stopped() {
			return nil
		}
		free := w.cfg.Concurrency - l.running
		// Outcomes wait for others to share their statement while
		// handlers still run, a batch's worth of slots is not free yet,
		// and the first has waited less than CompleteDelay.
		var linger <-chan time.Time
		outcomes := len(l.bad) > 0 || len(l.ok) > 0
		ready := l.running == 0 || free >= w.cfg.BatchSize
		if outcomes && !ready {
			if wait := w.cfg.CompleteDelay - time.Since(l.since); wait > 0 {
				if !l.timer.Stop() {
					select {
					case <-l.timer.C:
					default:
					}
				}
				l.timer.Reset(wait)
				linger = l.timer.C
			} else {
				ready = true
			}
		}
		if (outcomes && ready) || (!outcomes && l.needClaim && free > 0) {
			err := w.reportFailures(actx, l)
			var jobs []*Job
			var ctxs []context.Context
			if err == nil {
				jobs, ctxs, err = w.completeAndClaim(actx, l, free)
			}
			if err != nil {
				l.needClaim = true
				if w.aborted() {
					return ErrAborted
				}
				if !connectionLost(err) {
					return err
				}
				w.pause(l, err, w.stop)
				continue
			}
			l.backoff = firstBackoff
			n := len(jobs)
			l.needClaim = n > 0 && n == min(free, w.cfg.BatchSize)
			if !l.needClaim && !l.awaiting && free > n {
				w.startAwait(l)
			}
			if n > 0 && w.runBatch(l, jobs, ctxs) {
				return errHandedOff
			}
			continue
		}
		select {
		case f := <-l.done:
			l.running--
			w.sort(l, f)
		case err := <-l.awaitErr:
			l.awaiting = false
			l.needClaim = true
			if err != nil && !w.stopped() && !w.aborted() {
				if !connectionLost(err) {
					return wrap(err)
				}
				w.pause(l, err, w.stop)
			}
		case <-linger:
		case <-w.stop:
		case <-w.abort:
		}
	}
}

// loopQuery runs the claim loop's statement on a connection of the pool
// and calls scan with its rows.  The statement gets no cancelable
// context: pgx watches such a context with a goroutine of its own for
// every statement, which more than doubled the library's CPU time per
// task.  Abort interrupts it instead (interruptLoop), the way pgx does
// on a canceled context: by expiring the connection's deadline, which
// fails the statement and closes that connection.
func (w *Worker) loopQuery(ctx context.Context, scan func(pgx.Rows) error,
	sql string, args ...any) error {
	conn, err := w.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	w.loopMu.Lock()
	if w.aborted() {
		w.loopMu.Unlock()
		return ErrAborted
	}
	w.loopConn, w.loopExpired = conn.Conn().PgConn().Conn(), false
	w.loopMu.Unlock()
	defer func() {
		w.loopMu.Lock()
		if w.loopExpired { // too late to fail the statement: undo it
			w.loopConn.SetDeadline(time.Time{})
		}
		w.loopConn = nil
		w.loopMu.Unlock()
	}()
	rows, err := conn.Query(context.Background(), sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if err := scan(rows); err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

// interruptLoop fails the claim loop's statement in flight, if any.
func (w *Worker) interruptLoop() {
	w.loopMu.Lock()
	defer w.loopMu.Unlock()
	if w.loopConn != nil {
		w.loopConn.SetDeadline(time.Now().Add(-time.Second))
		w.loopExpired = true
	}
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}

func (w *Worker) stopped() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

func (w *Worker) aborted() bool {
	select {
	case <-w.abort:
		return true
	default:
		return false
	}
}

// pause logs a lost connection and waits out the backoff (0.1 s doubling
// to 2 s, jittered by +-25 %), or until stop is closed or Abort.
func (w *Worker) pause(l *loop, err error, stop <-chan struct{}) {
	what := "connection lost"
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "25006" {
		// A primary fenced off: the next connections find the writable one.
		what = "server read-only"
		for _, c := range w.pool.AcquireAllIdle(context.Background()) {
			c.Conn().Close(context.Background())
			c.Release()
		}
	}
	delay := time.Duration(float64(l.backoff) * (0.75 + rand.Float64()/2))
	w.cfg.Logf("schedq: %s (%v); retrying in %.1f s", what, err, delay.Seconds())
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-stop:
	case <-w.abort:
	}
	if l.backoff *= 2; l.backoff > mostBackoff {
		l.backoff = mostBackoff
	}
}

// startAwait waits in schedq.await_task on a connection of its own, so
// that the loop keeps reporting the handlers that finish meanwhile.
func (w *Worker) startAwait(l *loop) {
	ctx, cancel := context.WithCancel(context.Background())
	l.awaiting, l.cancelAw = true, cancel
	go func() {
		defer cancel()
		var queues any
		if w.cfg.Queues != nil {
			queues = w.cfg.Queues
		}
		_, err := w.pool.Exec(ctx,
			"CALL schedq.await_task(queues => $1::text[], caps => $2::text[], wait => $3::interval)",
			queues, w.cfg.Caps, w.cfg.Wait)
		l.awaitErr <- err
	}()
	go func() { // Stop or Abort end the wait (pgx closes that connection)
		select {
		case <-w.stop:
		case <-w.abort:
		case <-ctx.Done():
		}
		cancel()
	}()
}

// sort files a handler's return.
func (w *Worker) sort(l *loop, f finished) {
	if len(l.ok) == 0 && len(l.bad) == 0 {
		l.since = time.Now()
	}
	switch {
	case f.err != nil:
		l.bad = append(l.bad, f)
	case f.self:
		w.forget(f.job.Token)
		w.outcome(f, "done")
	default:
		l.ok = append(l.ok, f)
	}
}

func (w *Worker) outcome(f finished, status string) {
	if w.cfg.OnOutcome != nil {
		w.cfg.OnOutcome(Outcome{Job: f.job, Status: status, Err: f.err, Duration: f.dur})
	}
}

func (w *Worker) forget(token string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if h, ok := w.live[token]; ok {
		h.cancel()
		delete(w.live, token)
	}
}

func (w *Worker) isStale(token string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	h, ok := w.live[token]
	return !ok || h.stale
}

func (w *Worker) cancelAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, h := range w.live {
		h.cancel()
	}
}
