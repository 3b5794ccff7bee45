package schedq

import (
	"context"
	"sync/atomic"
	"time"
)

// A claimed batch's handlers run one after another in the claim loop's
// own goroutine: short handlers cost least that way, with no goroutine to
// start and no other one to wake for each batch (on a machine whose cores
// the server shares, every wake-up is time its backend waits).  A
// handler that takes longer must not hold back the others, nor the
// loop's completions and claims: the watchdog hands the jobs not yet
// started to a goroutine each, and the loop to a new goroutine, once a
// batch has run for one to two ticks of handoffTick.
//
// The watchdog ticks only while batches run: a timer armed for each
// batch instead wakes an idle thread each time (the Go runtime starts one
// to watch the new timer), which doubled the library's CPU time per
// no-op task.  It sleeps after idleTicks ticks without a batch, and the
// next batch wakes it.
const (
	handoffTick = time.Millisecond
	idleTicks   = 100
)

// batch is a claimed batch run in the claim loop's goroutine.
type batch struct {
	l     *loop
	jobs  []*Job
	ctxs  []context.Context
	next  atomic.Int32 // the next job not yet started
	owner atomic.Int32 // 0: running, 1: it ran in the loop, 2: handed off
}

// take returns the index of the next job to start, len(jobs) when there
// is none (or after Abort: the jobs not yet started are not run).
func (b *batch) take(w *Worker) int {
	if w.aborted() {
		return len(b.jobs)
	}
	return int(b.next.Add(1)) - 1
}

// runBatch runs a batch's handlers in this goroutine, the claim loop's.
// It reports true when the loop was handed to another goroutine
// meanwhile: then this one must end.  Every handler's return goes to
// l.done, which has room for them all.
func (w *Worker) runBatch(l *loop, jobs []*Job, ctxs []context.Context) (handedOff bool) {
	b := &batch{l: l, jobs: jobs, ctxs: ctxs}
	w.inline.Store(b)
	if w.dogAsleep.Load() && w.dogAsleep.CompareAndSwap(true, false) {
		w.dogWake <- struct{}{}
	}
	for i := b.take(w); i < len(jobs); i = b.take(w) {
		w.runJob(ctxs[i], jobs[i], l.done)
	}
	w.inline.CompareAndSwap(b, nil)
	return !b.owner.CompareAndSwap(0, 1)
}

// handOff starts the jobs of b not yet started in a goroutine each, and
// the claim loop in a new goroutine, unless b already ran.
func (w *Worker) handOff(b *batch) {
	if !b.owner.CompareAndSwap(0, 2) {
		return
	}
	w.inline.CompareAndSwap(b, nil) // the watchdog may sleep meanwhile
	for i := b.take(w); i < len(b.jobs); i = b.take(w) {
		go w.runJob(b.ctxs[i], b.jobs[i], b.l.done)
	}
	go w.ownLoop(b.l)
}

// watchdog hands off a batch seen running at two ticks in a row.
func (w *Worker) watchdog(runDone <-chan struct{}) {
	ticker := time.NewTicker(handoffTick)
	defer ticker.Stop()
	var seen *batch
	idle := 0
	for {
		select {
		case <-ticker.C:
		case <-runDone:
			return
		}
		b := w.inline.Load()
		if b != nil && b == seen {
			w.handOff(b)
		}
		if seen = b; b != nil {
			idle = 0
			continue
		}
		if idle++; idle < idleTicks {
			continue
		}
		// Sleep until runBatch wakes it; a batch that began meanwhile
		// is seen now, or its runBatch finds the watchdog asleep.
		ticker.Stop()
		w.dogAsleep.Store(true)
		if w.inline.Load() == nil || !w.dogAsleep.CompareAndSwap(true, false) {
			select {
			case <-w.dogWake:
			case <-runDone:
				return
			}
		}
		idle = 0
		ticker.Reset(handoffTick)
	}
}
