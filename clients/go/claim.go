package schedq

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

// The statements of the claim loop.
const (
	completeAndClaimSQL = `SELECT id, attempt, queue, kind, payload, priority, run_id,
	       lease_expires_at, token
	  FROM schedq.complete_and_claim($1::text[], $2::text, $3::text[]::jsonb[],
	       queues => $4::text[], caps => $5::text[], n => $6::integer,
	       lease => $7::interval)`
	completeManySQL = `SELECT schedq.complete_many($1::text[], $2::text[]::jsonb[])`
	failSQL         = `SELECT f
	  FROM unnest($1::text[], $2::text[], $3::float8[], $4::boolean[])
	       WITH ORDINALITY AS u(token, error, retry_in, permanent, i),
	       LATERAL schedq.fail(u.token, u.error, make_interval(secs => u.retry_in),
	                           u.permanent) AS f
	 ORDER BY u.i`
	heartbeatSQL = `SELECT t, schedq.heartbeat(t) FROM unnest($1::text[]) AS t`
)

// successes: the tokens and results of l.ok, less those found stale
// (reported as such).
func (w *Worker) successes(l *loop) ([]string, []*string) {
	kept := l.ok[:0]
	for _, f := range l.ok {
		if w.isStale(f.job.Token) {
			w.forget(f.job.Token)
			w.outcome(f, "stale")
			continue
		}
		kept = append(kept, f)
	}
	l.ok = kept
	tokens := make([]string, 0, len(l.ok)) // not nil: NULL is refused
	results := make([]*string, 0, len(l.ok))
	for _, f := range l.ok {
		tokens = append(tokens, f.job.Token)
		results = append(results, f.result)
	}
	return tokens, results
}

// completeAndClaim completes l.ok and claims up to free tasks (at most a
// batch) in one statement, and starts their handlers; it returns how many
// it claimed.
func (w *Worker) completeAndClaim(ctx context.Context, l *loop, free int) (int, error) {
	n := min(free, w.cfg.BatchSize)
	if n == 0 {
		return 0, w.completeMany(ctx, l)
	}
	tokens, results := w.successes(l)
	var queues any
	if w.cfg.Queues != nil {
		queues = w.cfg.Queues
	}
	rows, err := w.pool.Query(ctx, completeAndClaimSQL, tokens, w.cfg.Name, results,
		queues, w.cfg.Caps, n, w.cfg.Lease)
	if err != nil {
		return 0, wrap(err)
	}
	var jobs []*Job
	for rows.Next() {
		j := &Job{worker: w}
		var payload []byte
		if err := rows.Scan(&j.ID, &j.Attempt, &j.Queue, &j.Kind, &payload, &j.Priority,
			&j.RunID, &j.LeaseExpiresAt, &j.Token); err != nil {
			rows.Close()
			return 0, wrap(err)
		}
		j.Payload = payload
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return 0, wrap(err)
	}
	// Committed: the completions are done.
	for _, f := range l.ok {
		w.forget(f.job.Token)
		w.outcome(f, "done")
	}
	l.ok = nil
	ctxs := make([]context.Context, len(jobs))
	w.mu.Lock()
	for i, j := range jobs {
		jctx, cancel := context.WithCancel(context.Background())
		ctxs[i] = jctx
		w.live[j.Token] = &inHand{job: j, cancel: cancel}
	}
	w.mu.Unlock()
	l.running += len(jobs)
	if len(jobs) > 0 {
		go w.runBatch(jobs, ctxs, l)
	}
	return len(jobs), nil
}

// handoffAfter is how long a batch's handlers run one after another
// before the rest of the batch is handed to goroutines of their own.
const handoffAfter = 100 * time.Microsecond

// runBatch runs the handlers of a batch one after another in one
// goroutine, which is what short handlers cost least with; once the batch
// has run for handoffAfter, the jobs not yet started go to a goroutine
// each, so that no handler waits longer than that behind others.  After
// Abort, the jobs not yet started are not run.
func (w *Worker) runBatch(jobs []*Job, ctxs []context.Context, l *loop) {
	var next atomic.Int32 // the next job not yet started
	take := func() int {
		if w.aborted() {
			return len(jobs)
		}
		return int(next.Add(1)) - 1
	}
	t := time.AfterFunc(handoffAfter, func() {
		for i := take(); i < len(jobs); i = take() {
			go w.runJob(ctxs[i], jobs[i], l.done)
		}
	})
	defer t.Stop()
	for i := take(); i < len(jobs); i = take() {
		w.runJob(ctxs[i], jobs[i], l.done)
	}
}

// completeMany completes l.ok and claims nothing (when stopping).
func (w *Worker) completeMany(ctx context.Context, l *loop) error {
	tokens, results := w.successes(l)
	if len(tokens) == 0 {
		return nil
	}
	var oks []bool
	if err := w.pool.QueryRow(ctx, completeManySQL, tokens, results).Scan(&oks); err != nil {
		return wrap(err)
	}
	for i, f := range l.ok {
		w.forget(f.job.Token)
		if i < len(oks) && oks[i] {
			w.outcome(f, "done")
		} else {
			w.outcome(f, "stale")
		}
	}
	l.ok = nil
	return nil
}

// reportFailures fails the attempts in l.bad, in one statement.
func (w *Worker) reportFailures(ctx context.Context, l *loop) error {
	if len(l.bad) == 0 {
		return nil
	}
	tokens := make([]string, len(l.bad))
	msgs := make([]string, len(l.bad))
	retry := make([]*float64, len(l.bad))
	perm := make([]bool, len(l.bad))
	for i, f := range l.bad {
		tokens[i] = f.job.Token
		msgs[i], retry[i], perm[i] = failure(f.err)
	}
	statuses, err := column[string](ctx, w.pool, failSQL, tokens, msgs, retry, perm)
	if err != nil {
		return err
	}
	for i, f := range l.bad {
		w.forget(f.job.Token)
		status := "stale"
		if i < len(statuses) {
			status = statuses[i]
		}
		if status == "available" || status == "pending" {
			status = "retry"
		}
		w.outcome(f, status)
	}
	l.bad = nil
	return nil
}

// runJob runs a job's handler and hands its return to the loop.
func (w *Worker) runJob(ctx context.Context, j *Job, done chan<- finished) {
	start := time.Now()
	var res any
	var err error
	if h, ok := w.handlers[j.Kind]; !ok {
		err = Permanent(fmt.Errorf("no handler for kind %q", j.Kind))
	} else {
		func() {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
				}
			}()
			res, err = h(ctx, j)
		}()
	}
	f := finished{job: j, err: err, dur: time.Since(start)}
	if err == nil {
		if j.completed.Load() {
			f.self = true
		} else if f.result, err = resultJSON(res); err != nil {
			f.err = Permanent(err)
		}
	}
	done <- f
}

// heartbeats extends the leases of every task in hand every third of the
// lease, in one statement, and cancels the handlers of attempts that are
// no longer this worker's.
func (w *Worker) heartbeats(ctx context.Context, runDone <-chan struct{}) {
	every := w.cfg.Lease / 3
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		select {
		case <-runDone:
			return
		case <-ticker.C:
		}
		w.mu.Lock()
		tokens := make([]string, 0, len(w.live))
		for t, h := range w.live {
			if !h.stale {
				tokens = append(tokens, t)
			}
		}
		w.mu.Unlock()
		if len(tokens) == 0 {
			continue
		}
		hctx, cancel := context.WithTimeout(ctx, every)
		rows, err := w.pool.Query(hctx, heartbeatSQL, tokens)
		if err == nil {
			for rows.Next() {
				var token string
				var lease *time.Time
				if rows.Scan(&token, &lease) == nil && lease == nil {
					w.mu.Lock()
					if h, ok := w.live[token]; ok {
						h.stale = true
						h.cancel()
					}
					w.mu.Unlock()
				}
			}
			rows.Close()
			err = rows.Err()
		}
		cancel()
		if err != nil && ctx.Err() == nil {
			w.cfg.Logf("schedq: heartbeat failed: %v", wrap(err))
		}
	}
}

// signals: the first SIGTERM or SIGINT stops the worker, the second
// aborts it.
func (w *Worker) signals(runDone <-chan struct{}) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	go func() {
		defer signal.Stop(sigs)
		for n := 0; ; n++ {
			select {
			case s := <-sigs:
				if n == 0 {
					w.cfg.Logf("schedq: %v: finishing the tasks in hand (again to stop at once)", s)
					w.Stop()
				} else {
					w.cfg.Logf("schedq: %v: stopping at once", s)
					w.Abort()
				}
			case <-runDone:
				return
			}
		}
	}()
}
