package actoviq

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
)

// stageOrWrite writes p, or, while decisions are being recorded, adds it
// to d.staged, so that all the decisions of one Decide or Resume are one
// atomic write.
func (d *drive) stageOrWrite(ctx context.Context, p *store.RunWriteParams) error {
	if d.staged != nil {
		d.staged.Ledger = append(d.staged.Ledger, p.Ledger...)
		d.staged.Events = append(d.staged.Events, p.Events...)
		return nil
	}
	if d.hold(p) { // goes with the next call's first write (drive_carry.go)
		return nil
	}
	return d.write(ctx, p)
}

// event builds a transition event. Data is redacted before it is stored or
// handed to any sink.
func (d *drive) event(typ, callID string, data any) *store.EventRecord {
	var raw json.RawMessage
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			b, _ = json.Marshal(map[string]string{"marshal_error": err.Error()})
		}
		raw = d.rt.redactor.MarshaledJSON(b)
	}
	return &store.EventRecord{ID: d.rt.newID(), ParentRunID: d.run.ParentID, TraceID: d.cp.TraceID,
		SpanID: spanID(d.run.ID, callID), Type: typ, Time: d.rt.clock(), Data: raw}
}

// entryEvent builds the event of a ledger transition from the entry as it
// is stored. Every value of its data comes from that entry, which was
// redacted on its way to the store (arguments with the transcript item,
// error and decisions by redactEntry), so the data is encoded once and
// not walked by the redactor a second time. The event is timed at, or
// now when at is zero.
func (d *drive) entryEvent(typ string, en *store.LedgerEntry, at time.Time) *store.EventRecord {
	data := entryDataValue(en)
	b, ok := marshalToolCallData(&data)
	if !ok {
		slow := data // only this copy escapes, on this path
		var err error
		if b, err = json.Marshal(&slow); err != nil {
			b, _ = json.Marshal(map[string]string{"marshal_error": err.Error()})
		}
	}
	if at.IsZero() {
		at = d.rt.clock()
	}
	return &store.EventRecord{ID: d.rt.newID(), ParentRunID: d.run.ParentID, TraceID: d.cp.TraceID,
		SpanID: d.spans.of(d.run.ID, en.CallID), Type: typ, Time: at, Data: b}
}

// spanCache keeps the span id of each call of a drive's run: every
// transition of a call has an event in the call's span, and each would
// otherwise hash and allocate the same id again. Calls of one batch may
// make their transitions at once.
type spanCache struct {
	mu    sync.Mutex
	runID string
	ids   map[string]string // call id → spanID(runID, call id)
}

// of returns spanID(runID, callID).
func (c *spanCache) of(runID, callID string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runID != runID || c.ids == nil {
		c.runID, c.ids = runID, make(map[string]string, 8)
	}
	id, ok := c.ids[callID]
	if !ok {
		id = spanID(runID, callID)
		c.ids[callID] = id
	}
	return id
}

// reset forgets the ids kept (the calls of earlier turns), keeping the
// room made for them.
func (c *spanCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.ids)
}

// spanID is deterministic: a run's span, or a call's span within it.
func spanID(runID, callID string) string {
	var buf [128]byte
	sum := sha256.Sum256(append(append(append(buf[:0], runID...), 0), callID...))
	var h [16]byte
	hex.Encode(h[:], sum[:8])
	return string(h[:])
}

// write performs one fenced atomic write on a detached context (it records
// things that happened), updates the drive's view and emits the events.
func (d *drive) write(ctx context.Context, p *store.RunWriteParams) error {
	_, err := d.writeResult(ctx, p)
	return err
}

// writeResult is write, returning what was stored.
func (d *drive) writeResult(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	merged := false
	if d.resp != nil { // a held model response (drive_fold.go)
		if m := d.mergeResponse(p); m != nil {
			p, merged = m, true
		} else if err := d.responseFirst(ctx, p); err != nil {
			return nil, err
		}
	}
	if err := d.withCarried(ctx, p); err != nil { // a held committed write (drive_carry.go)
		return nil, err
	}
	res, err := d.writeLocked(ctx, p)
	if err == nil && merged {
		d.cpEnc.stored = d.respItems
	}
	return res, err
}

// writeLocked is writeResult with mu held.
func (d *drive) writeLocked(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	p.Tenant, p.RunID = d.rt.tenant, d.run.ID
	// A copy of the fence, shared by the writes made under it (a store
	// only reads it).
	if d.fenceCopy == nil || *d.fenceCopy != d.fence {
		f := d.fence
		d.fenceCopy = &f
	}
	p.Fence = d.fenceCopy
	// The write's entries, events and JSON were built for it and are not
	// changed after it (an entry is changed in a copy: cloneEntry): they
	// are handed over, so the memory store keeps them as they are.
	began := d.rt.clock()
	now := began // the write's deadline is from the wall clock
	if !d.rt.wallClock {
		now = time.Now()
	}
	wctx := handingOver(d.uncancelled(ctx), now, d.rt.commitTO, p)
	defer wctx.cancel()
	res, err := d.rt.store.RunWrite(wctx, p)
	if w := d.rt.observeStore("write", began); w != nil { // a lease too short for the store (lease.go)
		d.leaseShort(ctx, w, d.run.ID, d.run.ParentID)
	}
	if err != nil && errors.Is(err, store.ErrBusy) {
		res, err = d.rt.writeAgain(wctx, p, err, d.retryStop(ctx, p))
	}
	if err != nil && outcomeUnknown(err) {
		res, err = d.readBack(ctx, wctx, p, err)
	}
	if err != nil {
		return nil, fmt.Errorf("actoviq: run %s: write: %w", d.run.ID, err)
	}
	if res.Run != nil {
		d.run = res.Run
	}
	for _, en := range res.Ledger {
		d.ledger[en.CallID] = en
	}
	d.emitStored(ctx, res.Events)
	fence := p.Fence
	if p.Release {
		// The claim is given up: a fenced write would be fenced out. The
		// record of a sink's panic on this write's events is the one
		// write made after it (drive_sinks.go).
		fence = nil
	}
	d.recordSinkPanics(wctx, fence)
	return res, nil
}

// uncancelled is context.WithoutCancel(ctx), made once for the context
// the drive's writes are given one after another; mu is held.
func (d *drive) uncancelled(ctx context.Context) context.Context {
	if ctx == d.woFor { // never panics: woFor holds a pointer, or nothing
		return d.wo
	}
	wo := context.WithoutCancel(ctx)
	if reflect.TypeOf(ctx).Kind() == reflect.Pointer {
		d.woFor, d.wo = ctx, wo
	}
	return wo
}

// entry reads the drive's current copy of a ledger entry.
func (d *drive) entry(callID string) *store.LedgerEntry {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ledger[callID]
}

func (d *drive) emitStored(ctx context.Context, evs []*store.EventRecord) {
	if len(d.sinks) == 0 {
		return
	}
	for _, ev := range evs {
		data := ev.Data
		if ev.Type == EvModelResponse {
			// Its items are in the transcript: the log's items, in order,
			// after a session prefix held by reference.
			data = d.rt.withItems(data, func(from, n int) ([]item.Item, bool) {
				from += d.cp.logFrom
				if from < d.cp.logFrom || n < 0 || from+n > len(d.cp.Items) {
					return nil, false
				}
				return d.cp.Items[from : from+n], true
			})
		}
		d.emit(ctx, Event{Schema: EventSchema, ID: ev.ID, Seq: ev.Seq, RunID: ev.RunID, ParentRunID: ev.ParentRunID,
			TraceID: ev.TraceID, SpanID: ev.SpanID, Type: ev.Type, Time: ev.Time, Data: data})
	}
}

// emitEphemeral sends an event that is not persisted (Seq 0).
func (d *drive) emitEphemeral(ctx context.Context, typ string, data any) {
	if len(d.sinks) == 0 {
		return // nobody to tell: not even encoded
	}
	ev := d.event(typ, "", data)
	d.emit(ctx, Event{Schema: EventSchema, ID: ev.ID, RunID: d.run.ID, ParentRunID: ev.ParentRunID, TraceID: ev.TraceID,
		SpanID: ev.SpanID, Type: typ, Time: ev.Time, Data: ev.Data})
}

func (d *drive) emit(ctx context.Context, ev Event) {
	d.emitSafe(ctx, ev)
}

// saveRun writes the checkpoint with a new status, plus ledger writes and
// events, as one CAS on the run. A status other than running ends the
// drive: that write gives the claim up too (drive_claim.go).
func (d *drive) saveRun(ctx context.Context, status store.RunStatus, ledger []store.LedgerWrite, events ...*store.EventRecord) error {
	p := &store.RunWriteParams{Ledger: ledger, Events: events}
	if status != store.RunRunning {
		d.lastWrite(p)
	}
	if err := d.writeRun(ctx, p, status, nil); err != nil {
		return err
	}
	d.released = p.Release
	return nil
}

// writeRun adds the checkpoint's change to p (the head, the transcript
// items the log does not hold yet) with a new status and meta, and
// writes it as one CAS on the run.
func (d *drive) writeRun(ctx context.Context, p *store.RunWriteParams, status store.RunStatus, meta json.RawMessage) error {
	// A held model response goes first, alone (drive_fold.go): this write
	// is checked against the revision it gives the run, and appends only
	// what it did not.
	if err := d.flushResponse(ctx); err != nil {
		return err
	}
	head, app, err := d.cpEnc.encode(d.cp)
	if err != nil {
		return fmt.Errorf("actoviq: run %s: encode checkpoint: %w", d.run.ID, err)
	}
	p.Run = &store.RunUpdate{ExpectedRevision: d.run.Revision, Status: status, Checkpoint: head, Append: app, Meta: meta,
		WaitKind: waitKind(status, d.cp)}
	if err := d.write(ctx, p); err != nil {
		return err
	}
	d.cpEnc.wrote(d.cp)
	return nil
}

// finish ends the run in a final (or interrupted) status.
func (d *drive) finish(ctx context.Context, status store.RunStatus, evType string, pre ...*store.EventRecord) error {
	if d.cp.Error != nil {
		d.cp.Error.Message = d.redactText("", d.cp.Error.Message)
	}
	data := &RunEndedData{Status: statusOf(status), Usage: d.cp.Usage, Error: d.cp.Error}
	if status == store.RunInterrupted {
		data.Interruptions = d.cp.Interruptions
		if err := d.escalationAtStop(ctx); err != nil { // drive_approvals.go
			return err
		}
	}
	if err := d.saveRun(ctx, status, nil, append(pre, d.event(evType, "", data))...); err != nil {
		return err
	}
	if status == store.RunInterrupted {
		if err := d.escalationAtStop(ctx); err != nil {
			return err
		}
	}
	if status == store.RunCancelled {
		// However the run came to end cancelled, its children follow
		// their parent-close policy (child.go).
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(d.rt.ttl, d.rt.commitTO))
		defer cancel()
		d.rt.closeChildren(cctx, d.run.ID)
	}
	return nil
}

// entryWrite is a CAS write of an updated copy of a ledger entry, with
// the transition's event (nil: another event of the write describes it).
// The store keeps the transition and its event as one record.
func entryWrite(en *store.LedgerEntry, ev *store.EventRecord) store.LedgerWrite {
	return store.LedgerWrite{Entry: en, ExpectedRevision: en.Revision, Event: ev}
}

func cloneEntry(en *store.LedgerEntry) *store.LedgerEntry {
	c := *en
	return &c
}

// waitKind is the summary the store keeps with an interrupted run (see
// store.Run.WaitKind): the kind of its first open question, which the
// inbox counts by.
func waitKind(status store.RunStatus, cp *checkpoint) string {
	if status != store.RunInterrupted || cp == nil || len(cp.Interruptions) == 0 {
		return ""
	}
	return string(cp.Interruptions[0].Kind)
}

// A write the store refused for lock contention is made again.
//
// A drive's write records something that happened (a tool's result, the
// model's answer, a call about to start, the run's end). When the store
// answers [store.ErrBusy] (SQLite's file lock held by another process
// past its busy timeout, a PostgreSQL serialization failure), stopping
// the drive would leave a call whose tool returned as started, and so to
// reconciliation, with its result lost. The store guarantees that a busy
// write wrote nothing, so writeAgain sends the very same params again:
// the same revisions and the same fence, which decide as they would have
// the first time. A write that another writer overtook meanwhile fails
// with a conflict, one made after a takeover of the claim is fenced out;
// nothing is ever written twice, and only the store write is repeated,
// never a tool. An error whose outcome is not known (a connection lost
// during COMMIT) is not ErrBusy: it is read back first (readBack, below).
//
// The tries share the write's budget (Config.CommitTimeout, counted from
// the first): a try is made only when its wait and as long a try as the
// last one end before the budget does, so that the last answer is the
// store's, not the budget's; the last busy error is returned when the
// budget is spent. A try that the budget cut short all the same returns
// its own error (a context's: its outcome is the store's to tell), with
// the tries before it named.
//
// Which writes keep their retries when the drive is told to stop
// (retryStop): a write that moves a started (or unknown) call on records
// what a tool did, or that it never ran, and exists nowhere else; it is
// made again within its budget whatever happens to the drive meanwhile
// (Close waits for it). So is the write that records a cancellation, made
// once the drive's context was cancelled: it is how the run ends. Any
// other write (the model's answer, a call about to start, an event) stops
// its retries as soon as the drive's context ends (Close, a cancellation,
// a worker's release, a lost claim), between two tries: losing it loses
// nothing that happened outside the engine (a call not recorded started
// never runs), and the drive stops as the cause says (ErrClosed, the run
// ended cancelled). A try in flight is never cut short: its outcome is
// the store's to tell.

// busyFirstWait and busyMaxWait bound the pause between two tries of a
// busy write; the store has waited its own busy timeout in each try.
const (
	busyFirstWait = 20 * time.Millisecond
	busyMaxWait   = time.Second
)

// retryStop returns the context whose end stops the retries of p, a
// write refused as busy, before its budget is spent, or nil when p keeps
// its whole budget: p records a tool's outcome (it moves a call that
// started on), or the cancellation of the drive (ctx was cancelled before
// p was made). mu is held.
func (d *drive) retryStop(ctx context.Context, p *store.RunWriteParams) context.Context {
	for _, w := range p.Ledger {
		if en := d.ledger[w.Entry.CallID]; en != nil && (en.State == store.LedgerStarted || en.State == store.LedgerUnknown) {
			return nil
		}
	}
	if ctx.Err() != nil && d.cancelled(ctx) {
		return nil
	}
	return ctx
}

// writeAgain makes p again after it failed with err (matching
// store.ErrBusy), while wctx's deadline allows and stop (nil: never) has
// not ended.
func (rt *Runtime) writeAgain(wctx *writeCtx, p *store.RunWriteParams, err error, stop context.Context) (*store.RunWriteResult, error) {
	last := time.Since(wctx.deadline.Add(-rt.commitTO)) // the first try
	tries := 1
	var stopped <-chan struct{}
	if stop != nil {
		stopped = stop.Done()
	}
	for wait := busyFirstWait; ; wait = min(2*wait, busyMaxWait) {
		if stop != nil && stop.Err() != nil {
			return nil, busyStopped(stop, err, tries)
		}
		if !time.Now().Add(wait + last).Before(wctx.deadline) {
			return nil, fmt.Errorf("%w (%d tries in %v)", err, tries, rt.commitTO)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-stopped:
			t.Stop()
			return nil, busyStopped(stop, err, tries)
		}
		began := time.Now()
		res, again := rt.store.RunWrite(wctx, p)
		last = time.Since(began)
		if again == nil {
			return res, nil
		}
		if !errors.Is(again, store.ErrBusy) {
			if isContextErr(again) {
				return nil, fmt.Errorf("%w (after %d tries that met a busy store: %v)", again, tries, err)
			}
			return nil, again
		}
		err = again
		tries++
	}
}

// A write whose outcome is not known is read back.
//
// A store error that says nothing about what was stored (a connection
// lost while COMMIT was on its way or its answer was, an I/O error) may
// hide a write that committed. Stopping the drive then sends a call whose
// result was in fact recorded, or whose tool returned, to reconciliation.
// readBack tells the two apart for a fenced write of ledger records (no
// run update: a tool's result, a call about to start, the two carried
// together), reading each record back:
//   - every record at the revision after the one the write expected, and
//     as written (state, attempt, holder and epoch, times, result): the
//     write committed. Nobody else writes a record of this drive's run
//     under its fence, and the drive's own writes are made one at a time,
//     so the record is this write's. The drive goes on with it, and with
//     its events as stored.
//   - every record still at the revision the write expected: the write is
//     made again, the very same params, as a busy write is. The revisions
//     and the fence decide, as the first time, and they let one of the two
//     commit at most: the first try, if it is still on its way (PostgreSQL
//     holds it behind the run's lock until its transaction ends), commits
//     and the second meets a conflict, or the second commits and the
//     first can never. A conflict is read back once more.
//   - anything else (a record read back at another revision or not as
//     written, a read that fails): the first error stands, and the call
//     goes to reconciliation as before.
//
// Nothing is decided on a guess: "committed" rests on the record being
// read back (a reader sees only a committed write, and SQLite shows a
// commit only after its WAL was synced), "not committed" only sends the
// same CAS again. A write with a run update (the model's answer, the
// run's end) is not read back: it would need the run's checkpoint
// compared, and losing it loses no tool's outcome. One is: the model's
// answer written with its first call's started record (drive_fold.go),
// whose records are all new entries. They, read back as written, say the
// write committed (the run's update with them), and the run is read for
// its stored revision; read back absent, the same params are sent again,
// the run's revision check and the records' (they must not exist yet)
// letting one try commit at most.

// outcomeUnknown reports an error of a store write that says nothing
// about whether it committed: none of the store's own answers (each of
// which the store returns only when it knows), nor a context's (the
// write's budget is spent).
func outcomeUnknown(err error) bool {
	for _, known := range [...]error{store.ErrBusy, store.ErrConflict, store.ErrFenced, store.ErrNotFound, store.ErrInvalid,
		store.ErrData, store.ErrExists, store.ErrClaimHeld, store.ErrFull} {
		if errors.Is(err, known) {
			return false
		}
	}
	return !isContextErr(err)
}

// readBack settles p, a write that failed with err, whose outcome is not
// known; mu is held.
func (d *drive) readBack(ctx context.Context, wctx *writeCtx, p *store.RunWriteParams, err error) (*store.RunWriteResult, error) {
	if (p.Run != nil && !startsNew(p)) || p.Fence == nil || len(p.Ledger) == 0 {
		return nil, err
	}
	for again, reads := false, 1; ; reads++ {
		stored, committed, absent, torn := d.readRecords(wctx, p)
		switch {
		case committed:
			evs, ok := d.storedEvents(wctx, p)
			if !ok {
				return nil, err
			}
			res := &store.RunWriteResult{Ledger: stored, Events: evs}
			if p.Run != nil {
				// The records are new entries, in the write with the
				// run's update: it committed too. The run as stored.
				if res.Run, ok = d.storedRun(wctx, p); !ok {
					return nil, err
				}
			}
			return res, nil
		case torn && reads < 3:
			// The records are read one at a time: a write of them (the
			// first try, still on its way, or the one made again) landed
			// between two of the reads. A write is atomic: read them again.
		case absent && !again:
			again = true
			res, werr := d.rt.store.RunWrite(wctx, p)
			if werr != nil && errors.Is(werr, store.ErrBusy) {
				// Made again within the write's budget, as the first
				// try refused busy is (a tool's result keeps its retries
				// through a stop: retryStop).
				res, werr = d.rt.writeAgain(wctx, p, werr, d.retryStop(ctx, p))
			}
			if werr == nil {
				return res, nil
			}
			if !errors.Is(werr, store.ErrConflict) && !outcomeUnknown(werr) {
				return nil, werr // fenced, busy...: the store's answer
			}
		default:
			return nil, err
		}
	}
}

// startsNew reports whether p, a write with a run update, is a model's
// response written with its first call's started record (drive_fold.go):
// every ledger record a new entry, one of them started. Its records
// decide whether it committed: a new entry exists only once its write
// did, and nobody else creates the calls of a response the drive holds.
func startsNew(p *store.RunWriteParams) bool {
	started := false
	for _, w := range p.Ledger {
		if w.ExpectedRevision != 0 {
			return false
		}
		started = started || w.Entry.State == store.LedgerStarted
	}
	return started
}

// storedRun reads back the run of p, a write with a run update whose
// records were read back committed: ok when it is at the revision after
// the one p expected (nobody wrote it since).
func (d *drive) storedRun(ctx context.Context, p *store.RunWriteParams) (*store.Run, bool) {
	run, err := d.rt.store.RunGet(ctx, &store.RunGetParams{Tenant: p.Tenant, ID: p.RunID})
	if err != nil || run.Revision != p.Run.ExpectedRevision+1 || run.Status != p.Run.Status {
		return nil, false
	}
	return run, true
}

// readRecords reads back the records of p: committed when each is at the
// revision after the one p expected and as p wrote it, absent when each
// is at the revision p expected, torn when each is one or the other and
// some are each (a write of them landed between two reads).
func (d *drive) readRecords(ctx context.Context, p *store.RunWriteParams) (stored []*store.LedgerEntry, committed, absent, torn bool) {
	committed, absent, torn = true, true, true
	stored = make([]*store.LedgerEntry, 0, len(p.Ledger))
	for _, w := range p.Ledger {
		en, err := d.rt.store.LedgerGet(ctx, &store.LedgerGetParams{Tenant: p.Tenant, RunID: p.RunID, CallID: w.Entry.CallID})
		switch {
		case errors.Is(err, store.ErrNotFound) && w.ExpectedRevision == 0:
			committed = false
			continue
		case err != nil:
			return nil, false, false, false
		}
		written := en.Revision == w.ExpectedRevision+1 && sameRecord(en, w.Entry)
		if !written {
			committed = false
		}
		if en.Revision != w.ExpectedRevision {
			absent = false
			if !written {
				torn = false
			}
		}
		stored = append(stored, en)
	}
	return stored, committed, absent, torn && !committed && !absent
}

// sameRecord reports whether a record read back is the one written: the
// fields a transition sets, times to the microsecond every store keeps.
func sameRecord(got, want *store.LedgerEntry) bool {
	same := func(a, b time.Time) bool { return a.Truncate(time.Microsecond).Equal(b.Truncate(time.Microsecond)) }
	return got.State == want.State && got.Attempt == want.Attempt && got.Holder == want.Holder && got.Epoch == want.Epoch &&
		same(got.StartedAt, want.StartedAt) && same(got.CommittedAt, want.CommittedAt) &&
		bytes.Equal(got.Result, want.Result) && bytes.Equal(got.Error, want.Error)
}

// storedEvents finds the events of p, a write read back committed, as
// stored (with their sequence numbers), among the run's events after the
// drive's last run write.
func (d *drive) storedEvents(ctx context.Context, p *store.RunWriteParams) ([]*store.EventRecord, bool) {
	want := map[string]bool{}
	for _, ev := range p.AllEvents() {
		want[ev.ID] = true
	}
	if len(want) == 0 {
		return nil, true
	}
	evs, err := d.rt.store.EventList(ctx, &store.EventListParams{Tenant: p.Tenant, RunID: p.RunID, AfterSeq: d.run.EventSeq})
	if err != nil {
		return nil, false
	}
	out := make([]*store.EventRecord, 0, len(want))
	for _, ev := range evs {
		if want[ev.ID] {
			out = append(out, ev)
		}
	}
	return out, len(out) == len(want)
}

// busyStopped is the error of a busy write whose retries the drive's
// stop ended: it matches the context's error (the drive stops as its
// cause says) and store.ErrBusy.
func busyStopped(stop context.Context, err error, tries int) error {
	return fmt.Errorf("%w: not made again after %d tries that met a busy store (%w)", stop.Err(), tries, err)
}
