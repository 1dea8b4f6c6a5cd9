package actoviq

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/actoviq/actoviq-go/internal/toolrun"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// runBatch runs the prepared calls of the pending turn in the model's
// order (docs/design.md#the-ledger). A run of consecutive read calls runs in parallel, at
// most Limits.ReadParallelism at once; any other call runs alone, after
// every call before it has settled. The walk stops at the first call that
// is not settled (awaiting approval, interrupted, or left prepared by a
// cancellation): every later call stays prepared and runs after the
// decision, so nothing overtakes a call the model asked for first.
// blocked holds the calls the recovery rules already interrupted.
//
// The walk runs on a worker goroutine, the drive waiting (runOnWorker).
func (d *drive) runBatch(ctx context.Context, blocked map[string]bool) (interrupts []Interruption, err error) {
	defer func() {
		// A committed write still held goes now, before anything waits
		// (drive_carry.go); so does a model response held for a call
		// that did not start (drive_fold.go).
		if ferr := d.flushResponse(ctx); ferr != nil && err == nil {
			err = ferr
		}
		if ferr := d.flushCarried(ctx); ferr != nil && err == nil {
			err = ferr
		}
	}()
	b := &batch{ctx: ctx, blocked: blocked}
	if d.runner != nil && b.startsACall(d) {
		return d.runOnWorker(b)
	}
	return b.walk(d, nil)
}

// batch is the walk of runBatch: where it is and what it collected, so
// that the drive can take over a walk its worker began.
type batch struct {
	ctx        context.Context
	blocked    map[string]bool
	i          int // the next call of d.cp.Pending
	interrupts []Interruption
}

// startsACall reports whether the walk has a call to start.
func (b *batch) startsACall(d *drive) bool {
	for _, id := range d.cp.Pending {
		en := d.entry(id)
		if en.State == store.LedgerCommitted {
			continue
		}
		return !b.blocked[en.CallID] && en.State == store.LedgerPrepared
	}
	return false
}

// walk runs the batch from b.i. On the worker (w set), a lone call's tool
// runs on the walk's goroutine (runCall); the walk returns
// toolrun.ErrTakenOver, having touched nothing of the drive's since that
// tool began, when the drive took the call over meanwhile.
func (b *batch) walk(d *drive, w *batchWorker) ([]Interruption, error) {
	pending := d.cp.Pending
	for b.i < len(pending) {
		en := d.entry(pending[b.i])
		if en.State == store.LedgerCommitted {
			b.i++
			continue
		}
		if b.blocked[en.CallID] || en.State != store.LedgerPrepared {
			return b.interrupts, nil
		}
		group := []*store.LedgerEntry{en}
		if en.Effect == tool.Read.String() {
			for j := b.i + 1; j < len(pending); j++ {
				next := d.entry(pending[j])
				if b.blocked[next.CallID] || next.State != store.LedgerPrepared || next.Effect != tool.Read.String() {
					break
				}
				group = append(group, next)
			}
		}
		// A lone call with a call after it: its committed write goes with
		// that call's first write (drive_carry.go).
		d.holdCommit = len(group) == 1 && b.i+1 < len(pending)
		in, err := d.runGroup(b.ctx, group, w)
		if err == toolrun.ErrTakenOver {
			return nil, err
		}
		if stop, err := b.after(d, group, in, err); stop {
			return b.interrupts, err
		}
	}
	return b.interrupts, nil
}

// after takes in what a group's run left; stop says the walk ends there.
func (b *batch) after(d *drive, group []*store.LedgerEntry, in []Interruption, err error) (stop bool, _ error) {
	d.holdCommit = false
	b.interrupts = append(b.interrupts, in...)
	if err != nil || len(in) > 0 {
		return true, err
	}
	for _, g := range group {
		if d.carriedState(g.CallID) != store.LedgerCommitted {
			// Not started (cancellation, the run's deadline): what
			// comes after it waits too.
			return true, nil
		}
	}
	b.i += len(group)
	return false, nil
}

// runGroup runs one call, or a run of consecutive reads in parallel. A
// lone call's tool runs on the calling goroutine when w is set (runCall).
func (d *drive) runGroup(ctx context.Context, group []*store.LedgerEntry, w *batchWorker) ([]Interruption, error) {
	if len(group) == 1 {
		in, err := d.runCall(ctx, group[0], w)
		if in != nil {
			return []Interruption{*in}, err
		}
		return nil, err
	}
	sem := make(chan struct{}, d.limits.ReadParallelism)
	var wg sync.WaitGroup
	ins := make([]*Interruption, len(group))
	errs := make([]error, len(group))
	for i, en := range group {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ins[i], errs[i] = d.runCall(ctx, en, nil)
		}()
	}
	wg.Wait()
	var out []Interruption
	for _, in := range ins {
		if in != nil {
			out = append(out, *in)
		}
	}
	return out, errors.Join(errs...)
}

// One worker per batch.
//
// A tool may ignore its context, so it never runs on the drive's own
// goroutine: the drive must return at the call's deadline, on a
// cancellation or a Close, whatever the tool does
// (docs/design.md#effects-and-keys). tool.Runner.Run gives each call a
// goroutine of its own for that; starting it wakes an idle core, and
// waiting for it costs a hand-off back, for every call. Instead the drive
// hands the whole walk of a batch to one worker goroutine and waits for
// it: the worker runs the calls one after another, each lone call's tool
// on the worker itself (internal/toolrun), so a batch costs one hand-off,
// not one per call.
//
// The worker holds mu all the time except while one of its tools runs.
// The drive waits for the walk's end, its context's end and the running
// call's deadline (one timer, moved only when a call's deadline is
// earlier than the one it is set for). When the context ends or the
// deadline passes while a tool runs, the drive takes mu (at once: the
// worker let it go), marks the call taken and ends it as the runner
// would: the tool's context ends and the call's outcome is unknown
// (KindTimeout, KindCancelled). The drive then records that outcome and
// walks on from that call itself, as a drive without a worker does. The
// tool, when it returns, finds the call taken (toolrun.Host.Leave) and the
// worker ends without a write or a look at the drive's state. The
// context's end while the worker runs the engine's own code (a write, a
// policy) waits for it, as it would on the drive's goroutine: the worker
// starts no call once the context ended (runCall, Runner.Run).
type batchWorker struct {
	mu sync.Mutex

	// Set by the worker under mu: the call whose tool runs.
	inTool   bool
	deadline time.Time                // the running call's; zero: none
	end      func(expired bool) error // ends it for a takeover (toolrun.Host.Enter)
	en       *store.LedgerEntry       // its entry, as the started write left it
	cancel   context.CancelFunc       // ends its context (runCall)

	takenOver bool // by the drive; the worker writes nothing more

	// The walk's end, set by the worker under mu before it sends on done.
	finished bool
	in       []Interruption
	err      error
	panicked any  // a panic in the engine's code on the worker
	goexit   bool // the worker's goroutine ended (runtime.Goexit)
	done     chan struct{}

	timer *time.Timer
	armed time.Time // when timer fires; zero: stopped or fired; under mu
}

// runOnWorker runs the walk on a worker goroutine and waits for it, or
// takes it over.
func (d *drive) runOnWorker(b *batch) ([]Interruption, error) {
	w := &batchWorker{done: make(chan struct{}, 1), timer: time.NewTimer(time.Hour)}
	w.timer.Stop()
	defer w.timer.Stop()
	w.mu.Lock() // the worker's from now on
	go w.work(d, b)
	for {
		select {
		case <-w.done:
			w.mu.Lock()
			return d.workerEnded(b, w)
		case <-b.ctx.Done():
			w.mu.Lock()
			if w.finished {
				return d.workerEnded(b, w)
			}
			return d.takeOver(b, w, takeCancelled)
		case <-w.timer.C:
			w.mu.Lock()
			w.armed = time.Time{}
			switch {
			case w.finished:
				return d.workerEnded(b, w)
			case !w.deadline.IsZero() && !time.Now().Before(w.deadline):
				return d.takeOver(b, w, takeExpired)
			case !w.deadline.IsZero():
				w.arm(w.deadline) // set for an earlier call's deadline
			}
			w.mu.Unlock()
		}
	}
}

// workerEnded returns what the worker's walk returned (mu is held, the
// worker has ended).
func (d *drive) workerEnded(b *batch, w *batchWorker) ([]Interruption, error) {
	switch {
	case w.goexit && w.inTool:
		return d.takeOver(b, w, takeGoexit)
	case w.goexit:
		w.mu.Unlock()
		runtime.Goexit() // as if the drive's own goroutine had run the code that ended it
	case w.panicked != nil:
		w.mu.Unlock()
		panic(w.panicked) // as if the drive's own goroutine had run the code that panicked
	}
	in, err := w.in, w.err
	w.mu.Unlock()
	return in, err
}

// work is the worker's goroutine: it holds mu from runOnWorker on.
func (w *batchWorker) work(d *drive, b *batch) {
	returned := false
	defer func() {
		if returned {
			return
		}
		p := recover()
		if w.inTool { // only the worker writes inTool: a tool ended the goroutine
			w.mu.Lock()
			if w.takenOver {
				w.mu.Unlock()
				return
			}
		}
		w.panicked, w.goexit, w.finished = p, p == nil, true
		w.mu.Unlock()
		w.done <- struct{}{}
	}()
	in, err := b.walk(d, w)
	returned = true
	if err == toolrun.ErrTakenOver {
		return // the drive has the walk: nothing here is ours any more
	}
	w.in, w.err, w.finished = in, err, true
	w.mu.Unlock()
	w.done <- struct{}{}
}

// Enter implements toolrun.Host: the worker lets the batch go while the
// call's tool runs.
func (w *batchWorker) Enter(deadline time.Time, end func(expired bool) error) {
	w.inTool, w.deadline, w.end = true, deadline, end
	if !deadline.IsZero() && (w.armed.IsZero() || deadline.Before(w.armed)) {
		w.arm(deadline)
	}
	w.mu.Unlock()
}

// Leave implements toolrun.Host: the worker takes the batch back, unless
// the drive took the call over.
func (w *batchWorker) Leave() bool {
	w.mu.Lock()
	if w.takenOver {
		w.mu.Unlock()
		return false
	}
	w.inTool, w.end = false, nil
	return true
}

// arm sets the timer to fire at t; mu is held.
func (w *batchWorker) arm(t time.Time) {
	w.armed = t
	w.timer.Reset(time.Until(t))
}

// Why the drive takes a call over.
const (
	takeCancelled = iota // the drive's context ended
	takeExpired          // the call's deadline passed
	takeGoexit           // the tool ended the worker's goroutine
)

// takeOver takes the running call from the worker (mu is held, the tool
// runs or ended the goroutine), records its outcome as unknown, as
// recordOutcome does when Runner.Run returns at a deadline or a
// cancellation, and walks on from it on the drive's goroutine.
func (d *drive) takeOver(b *batch, w *batchWorker, why int) ([]Interruption, error) {
	w.takenOver = true
	var err error
	if why == takeGoexit {
		w.end(false) // ends the call's context
		err = &tool.Error{Kind: tool.KindExecution, Tool: w.en.Tool, Started: true, OutcomeUnknown: true, Err: errToolGoexit}
	} else {
		err = w.end(why == takeExpired)
	}
	en, cancel := w.en, w.cancel
	w.mu.Unlock()
	in, err := d.recordOutcome(b.ctx, en, tool.Result{}, err)
	cancel()
	var ins []Interruption
	if in != nil {
		ins = []Interruption{*in}
	}
	if stop, err := b.after(d, []*store.LedgerEntry{en}, ins, err); stop {
		return b.interrupts, err
	}
	return b.walk(d, nil)
}

// errToolGoexit is the error of a call whose tool ended the worker's
// goroutine (as tool.Runner.Run reports it on a goroutine of its own).
var errToolGoexit = errors.New("the tool ended its goroutine (runtime.Goexit) before it returned")
