package schedq

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v4"
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
// batch) in one statement; it returns the tasks claimed, counted as
// running, and their handlers' contexts, for runBatch.
func (w *Worker) completeAndClaim(ctx context.Context, l *loop, free int) ([]*Job, []context.Context, error) {
	n := min(free, w.cfg.BatchSize)
	if n == 0 {
		return nil, nil, w.completeMany(ctx, l)
	}
	tokens, results := w.successes(l)
	var queues any
	if w.cfg.Queues != nil {
		queues = w.cfg.Queues
	}
	var jobs []*Job
	err := w.loopQuery(ctx, func(rows pgx.Rows) error {
		for rows.Next() {
			j := &Job{worker: w}
			var payload []byte
			if err := rows.Scan(&j.ID, &j.Attempt, &j.Queue, &j.Kind, &payload, &j.Priority,
				&j.RunID, &j.LeaseExpiresAt, &j.Token); err != nil {
				return err
			}
			j.Payload = payload
			jobs = append(jobs, j)
		}
		return nil
	}, completeAndClaimSQL, tokens, w.cfg.Name, results, queues, w.cfg.Caps, n, w.cfg.Lease)
	if err != nil {
		return nil, nil, wrap(err)
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
	return jobs, ctxs, nil
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
