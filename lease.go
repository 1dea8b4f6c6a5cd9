package actoviq

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// A lease too short for the store. A drive keeps its claim alive with a
// heartbeat every LeaseTTL/3, and every write it makes is fenced by that
// claim. A store round trip that takes longer than a third of the lease
// leaves the heartbeat behind: the claim expires while the drive still
// works, another worker may take the run over, and the drive stops at its
// next write, often with a call of unknown outcome that then waits for
// reconciliation. The runtime measures its store round trips (the runs'
// writes, the heartbeats' renewals, the claims) on [Config.Clock] and says
// so when one does not fit: [Runtime.LeaseWarning], a run.lease_short
// event ([LeaseShortData]) to the sinks of the drive that saw it, and a
// warning in the log of [Runtime.Work].

// LeaseSafeMultiple is how many of the slowest store round trips seen a
// lease must hold for the runtime to stay quiet: below it
// [Runtime.LeaseWarning] reports the lease as too short.
const LeaseSafeMultiple = 3

// LeaseWarning says that a store round trip took longer than the lease
// allows (see [LeaseSafeMultiple]): drives may lose their claims for no
// other reason than the lease, and stop with calls to reconcile.
type LeaseWarning struct {
	// LeaseTTL is the runtime's lease ([Config.LeaseTTL]).
	LeaseTTL time.Duration `json:"lease_ttl"`
	// Op is the store operation that took Took: "write" (a run's write),
	// "renew" (a heartbeat) or "claim".
	Op string `json:"op"`
	// Took is how long it took: the slowest round trip seen so far.
	Took time.Duration `json:"took"`
	// Suggested is the shortest lease that holds [LeaseSafeMultiple]
	// round trips of that length.
	Suggested time.Duration `json:"suggested"`
	// At is when it was seen (the runtime's clock).
	At time.Time `json:"at"`
}

// String says what was seen and what to do.
func (w *LeaseWarning) String() string {
	return fmt.Sprintf("the lease (Config.LeaseTTL %s) is shorter than %d store round trips: a %s took %s; drives may lose "+
		"their claims and stop runs for reconciliation; set Config.LeaseTTL to at least %s",
		w.LeaseTTL, LeaseSafeMultiple, w.Op, w.Took, w.Suggested)
}

// LeaseShortData is the payload of run.lease_short (emitted, not stored):
// a store round trip of this drive took longer than the lease allows.
// It is emitted when the runtime sees a slower round trip than any it
// warned about before, so a lease that stays too short does not flood
// the sinks.
type LeaseShortData struct {
	LeaseWarning
}

// EventTypes implements [EventData].
func (*LeaseShortData) EventTypes() []string { return []string{EvRunLeaseShort} }

// LeaseWarning reports the slowest store round trip this runtime has seen
// that did not fit its lease (see [LeaseSafeMultiple]), or nil when every
// one fit. It is a measurement of this process: a lease that fits here
// may not fit a worker on a slower link to the store.
func (rt *Runtime) LeaseWarning() *LeaseWarning {
	rt.lease.mu.Lock()
	defer rt.lease.mu.Unlock()
	if rt.lease.worst == nil {
		return nil
	}
	w := *rt.lease.worst
	return &w
}

// leaseWatch holds the slowest round trip that did not fit the lease.
type leaseWatch struct {
	mu    sync.Mutex
	worst *LeaseWarning
	seq   int // counts the warnings, for Work's log
}

// observe records a store round trip of op that started at began; it
// returns a warning when the round trip does not fit the lease and is
// slower than any warned about before.
func (rt *Runtime) observeStore(op string, began time.Time) *LeaseWarning {
	now := rt.clock()
	took := now.Sub(began)
	if took*LeaseSafeMultiple <= rt.ttl {
		return nil
	}
	rt.lease.mu.Lock()
	defer rt.lease.mu.Unlock()
	if rt.lease.worst != nil && took <= rt.lease.worst.Took {
		return nil
	}
	w := &LeaseWarning{LeaseTTL: rt.ttl, Op: op, Took: took, Suggested: took * LeaseSafeMultiple, At: now}
	rt.lease.worst = w
	rt.lease.seq++
	c := *w
	return &c
}

// leaseWarned returns the warning to log when there is one newer than
// the seq the caller logged last.
func (rt *Runtime) leaseWarned(logged int) (*LeaseWarning, int) {
	rt.lease.mu.Lock()
	defer rt.lease.mu.Unlock()
	if rt.lease.seq == logged || rt.lease.worst == nil {
		return nil, logged
	}
	w := *rt.lease.worst
	return &w, rt.lease.seq
}

// leaseShort emits run.lease_short for run runID (parent, trace: its
// envelope).
func (d *drive) leaseShort(ctx context.Context, w *LeaseWarning, runID, parent string) {
	trace := ""
	if d.cp != nil {
		trace = d.cp.TraceID
	}
	data, _ := json.Marshal(&LeaseShortData{*w})
	d.emit(ctx, Event{Schema: EventSchema, ID: d.rt.newID(), RunID: runID, ParentRunID: parent, TraceID: trace,
		SpanID: spanID(runID, ""), Type: EvRunLeaseShort, Time: d.rt.clock(), Data: data})
}
