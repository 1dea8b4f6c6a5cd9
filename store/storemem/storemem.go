package storemem

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/actoviq/actoviq-go/internal/handoff"
	"github.com/actoviq/actoviq-go/internal/jsonenc"
	"github.com/actoviq/actoviq-go/store"
)

// Config configures a [Store]. A nil *Config means defaults.
type Config struct {
	// Clock gives the current time for timestamps and claim expiry.
	// Nil means time.Now.
	Clock store.Clock
}

// Store is an in-memory [store.Store].
type Store struct {
	clock store.Clock

	mu     sync.Mutex
	closed bool
	runs   map[key]*store.Run
	ledger map[key]map[string]*store.LedgerEntry // run key → call id → entry
	events map[key]*eventList
	claims map[key]*store.Claim
	// released holds the claims their holder gave up (ClaimRelease, a
	// run write's Release) and nobody took since: a write fenced by one
	// is fenced out (store.FencedError.Released).
	released map[key]bool
	sessions map[key]*session
	once     map[key]*store.OnceRecord
	// watch holds, per tenant, the channel closed at the next queued run.
	watch map[string]chan struct{}
}

type key struct{ tenant, id string }

// event is a stored event: a [store.EventRecord] less what its run's key
// gives (tenant, run id) and its place in the run's list gives (its
// sequence number), held by value in that list. Its time is kept as Unix
// microseconds (a stored time is UTC to the microsecond: [store.Time]),
// its id as the 16 bytes its 32 lowercase hex digits stand for (the
// engine's ids; any other id is kept as it is, in the list's odd), and
// its parent run and trace ids in a pair shared with the event before
// when they are the same (they are the run's). A stored event takes 88
// bytes beside its JSON, not a record of 176, a pointer and a 32-byte id:
// the memory store keeps every event of every run.
type event struct {
	time int64
	id   [16]byte
	ids  *eventIDs
	span string
	typ  string
	data json.RawMessage
}

type eventIDs struct{ parent, trace string }

// eventList is a run's stored events, in order, in chunks of a fixed
// size: a list grows without copying what it holds, and keeps at most a
// chunk's room unused (a slice grown by append kept up to as much room as
// it held events, and copied them at each growth).
type eventList struct {
	chunks []*[eventChunk]event
	n      int
	// odd holds, by place, the ids that are not 32 lowercase hex digits.
	odd map[int]string
}

const eventChunk = 4

// len returns the number of events.
func (l *eventList) len() int {
	if l == nil {
		return 0
	}
	return l.n
}

// at returns the i-th event.
func (l *eventList) at(i int) *event { return &l.chunks[i/eventChunk][i%eventChunk] }

// add appends e (timed, its Data the store's to keep, numbered next: a
// run's events are numbered from 1 in the order they are stored, as the
// run's EventSeq counts them).
func (l *eventList) add(e *store.EventRecord) {
	var ids *eventIDs
	if l.n > 0 {
		if last := l.at(l.n - 1); last.ids.parent == e.ParentRunID && last.ids.trace == e.TraceID {
			ids = last.ids
		}
	}
	if ids == nil {
		ids = &eventIDs{e.ParentRunID, e.TraceID}
	}
	if l.n%eventChunk == 0 {
		l.chunks = append(l.chunks, new([eventChunk]event))
	}
	ev := event{time: e.Time.UnixMicro(), ids: ids, span: e.SpanID, typ: e.Type, data: e.Data}
	if !hexID(&ev.id, e.ID) {
		if l.odd == nil {
			l.odd = map[int]string{}
		}
		l.odd[l.n] = e.ID
	}
	*l.at(l.n) = ev
	l.n++
}

// hexID decodes id into b when it is 32 lowercase hex digits, which
// encode back to the same text.
func hexID(b *[16]byte, id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := range len(id) {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	_, err := hex.Decode(b[:], []byte(id))
	return err == nil
}

// record returns a copy of the i-th event that shares nothing with it.
func (l *eventList) record(k key, i int) *store.EventRecord {
	e := l.at(i)
	id, odd := l.odd[i]
	if !odd {
		id = hex.EncodeToString(e.id[:])
	}
	return &store.EventRecord{Tenant: k.tenant, RunID: k.id, Seq: int64(i + 1), ID: id, ParentRunID: e.ids.parent, TraceID: e.ids.trace,
		SpanID: e.span, Type: e.typ, Time: time.UnixMicro(e.time).UTC(), Data: cloneJSON(e.data)}
}

// eventsLocked returns the run's event list, made if it has none.
func (s *Store) eventsLocked(k key) *eventList {
	l := s.events[k]
	if l == nil {
		l = &eventList{}
		s.events[k] = l
	}
	return l
}

type session struct {
	revision  int64
	entries   []store.SessionEntry
	snapshots map[int64]json.RawMessage
}

var _ store.Store = (*Store)(nil)

// New returns an empty store.
func New(cfg *Config) *Store {
	s := &Store{
		runs:     map[key]*store.Run{},
		ledger:   map[key]map[string]*store.LedgerEntry{},
		events:   map[key]*eventList{},
		claims:   map[key]*store.Claim{},
		released: map[key]bool{},
		sessions: map[key]*session{},
		once:     map[key]*store.OnceRecord{},
		watch:    map[string]chan struct{}{},
	}
	if cfg != nil {
		s.clock = cfg.Clock
	}
	return s
}

var errClosed = fmt.Errorf("storemem: store is closed")

func (s *Store) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errClosed
	}
	return nil
}

// Close marks the store closed; later calls fail.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

func cloneJSON(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return bytes.Clone(b)
}

func checkJSON(kind, id string, fields ...json.RawMessage) error {
	for _, f := range fields {
		if f != nil && !jsonenc.Valid(f) {
			return &store.DataError{Kind: kind, ID: id, Err: fmt.Errorf("stored JSON is invalid")}
		}
	}
	return nil
}

// cloneRun copies a stored run, with its log when withLog is set.
func cloneRun(r *store.Run, withLog bool) (*store.Run, error) {
	if err := checkJSON("run", r.ID, r.Checkpoint, r.Meta); err != nil {
		return nil, err
	}
	if !r.Status.Valid() {
		return nil, &store.DataError{Kind: "run", ID: r.ID, Err: fmt.Errorf("unknown status %q", r.Status)}
	}
	c := *r
	c.Checkpoint = cloneJSON(r.Checkpoint)
	c.Meta = cloneJSON(r.Meta)
	c.LogLen = len(r.Log)
	c.Log = nil
	if withLog && len(r.Log) > 0 {
		if err := checkJSON("run", r.ID, r.Log...); err != nil {
			return nil, err
		}
		// Stored items are never changed in place (an append adds new
		// ones), so the copy shares them.
		c.Log = slices.Clip(r.Log)
	}
	return &c, nil
}

func cloneDecision(d *store.DecisionRecord) *store.DecisionRecord {
	if d == nil {
		return nil
	}
	c := *d
	c.Result = cloneJSON(d.Result)
	c.Evidence = cloneJSON(d.Evidence)
	if d.Seen != nil || len(d.Approvers) > 0 || len(d.Earlier) > 0 {
		// The nested records (what approvers saw, earlier approvals) are
		// copied whole, so a caller's later change cannot reach the store.
		b, _ := json.Marshal(d)
		var deep store.DecisionRecord
		if json.Unmarshal(b, &deep) == nil {
			// Times keep their monotonic readings, as the shallow copy does.
			deep.At, deep.ExpiresAt, deep.ExpiredAt, deep.WaitingSince, deep.EscalatedAt = d.At, d.ExpiresAt, d.ExpiredAt, d.WaitingSince, d.EscalatedAt
			return &deep
		}
	}
	return &c
}

func cloneEntry(e *store.LedgerEntry) (*store.LedgerEntry, error) {
	id := e.RunID + "/" + e.CallID
	if err := checkJSON("ledger", id, e.Args, e.Result, e.Error); err != nil {
		return nil, err
	}
	if !e.State.Valid() {
		return nil, &store.DataError{Kind: "ledger", ID: id, Err: fmt.Errorf("unknown state %q", e.State)}
	}
	return copyEntry(e, nil), nil
}

// copyEntry copies an entry known to be valid (just checked by
// [store.Check] on the way in). A JSON field that is the very slice cur
// (the entry stored now, nil for none) holds, handed back by a caller
// that read it from a write's result, is kept as it is: those are the
// store's own bytes, which nothing changes in place.
func copyEntry(e, cur *store.LedgerEntry) *store.LedgerEntry {
	c := *e
	if cur == nil {
		cur = &store.LedgerEntry{}
	}
	c.Args = keepOrClone(e.Args, cur.Args)
	c.Result = keepOrClone(e.Result, cur.Result)
	c.Error = keepOrClone(e.Error, cur.Error)
	if e.Approval != cur.Approval {
		c.Approval = cloneDecision(e.Approval)
	}
	if e.Resolution != cur.Resolution {
		c.Resolution = cloneDecision(e.Resolution)
	}
	return &c
}

// newResult returns a write's result with room for nl entries and ne
// events (nil slices for none), in one allocation for the common writes:
// one entry and its event, and a call's started transition carrying the
// committed one of the call before (drive_carry.go in the engine).
func newResult(nl, ne int) *store.RunWriteResult {
	if nl <= 2 && ne <= 3 {
		one := &struct {
			r store.RunWriteResult
			l [2]*store.LedgerEntry
			e [3]*store.EventRecord
		}{}
		if nl > 0 {
			one.r.Ledger = one.l[:0:nl]
		}
		if ne > 0 {
			one.r.Events = one.e[:0:ne]
		}
		return &one.r
	}
	res := &store.RunWriteResult{}
	if nl > 0 {
		res.Ledger = make([]*store.LedgerEntry, 0, nl)
	}
	if ne > 0 {
		res.Events = make([]*store.EventRecord, 0, ne)
	}
	return res
}

// handedEntry is copyEntry for an entry the engine hands over: the entry
// and its JSON are kept, not copied; only decision records new to the
// entry are copied (the engine builds those from a person's decision,
// and may keep them).
func handedEntry(e, cur *store.LedgerEntry) *store.LedgerEntry {
	if cur == nil {
		cur = &store.LedgerEntry{}
	}
	if e.Approval != cur.Approval {
		e.Approval = cloneDecision(e.Approval)
	}
	if e.Resolution != cur.Resolution {
		e.Resolution = cloneDecision(e.Resolution)
	}
	return e
}

// keepOrClone returns stored when b is that very slice, else a copy of b.
func keepOrClone(b, stored json.RawMessage) json.RawMessage {
	if len(b) > 0 && len(b) == len(stored) && &b[0] == &stored[0] {
		return stored
	}
	return cloneJSON(b)
}

func cloneEvent(e *store.EventRecord) *store.EventRecord {
	c := *e
	c.Data = cloneJSON(e.Data)
	return &c
}

// ClaimAcquire implements [store.Store].
func (s *Store) ClaimAcquire(ctx context.Context, p *store.ClaimAcquireParams) (*store.Claim, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	now := s.clock.Now()
	k := key{p.Tenant, p.Key}
	c, ok := s.claims[k]
	switch {
	case !ok:
		c = &store.Claim{Tenant: p.Tenant, Key: p.Key, Epoch: 1}
		s.claims[k] = c
	case c.ExpiresAt.After(now):
		if c.Holder != p.Holder {
			return nil, &store.ClaimHeldError{Key: p.Key, Holder: c.Holder, Epoch: c.Epoch, ExpiresAt: c.ExpiresAt.Format(time.RFC3339Nano)}
		}
	default:
		c.Epoch++
	}
	c.Holder = p.Holder
	c.ExpiresAt = store.Time(now.Add(p.TTL))
	c.HeartbeatAt = now
	delete(s.released, k)
	cc := *c
	return &cc, nil
}

// ClaimGet implements [store.Store].
func (s *Store) ClaimGet(ctx context.Context, p *store.ClaimGetParams) (*store.Claim, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	c, ok := s.claims[key{p.Tenant, p.Key}]
	if !ok {
		return nil, &store.NotFoundError{Kind: "claim", ID: p.Key}
	}
	cc := *c
	return &cc, nil
}

// fenceLocked checks a fence: the claim has its holder and epoch, and
// was not released since; s.mu is held.
func (s *Store) fenceLocked(tenant string, f store.Fence) (*store.Claim, error) {
	c, err := s.ownedLocked(tenant, f)
	if err == nil && s.released[key{tenant, f.Key}] {
		return nil, &store.FencedError{Key: f.Key, Holder: f.Holder, Epoch: f.Epoch, CurrentHolder: c.Holder, CurrentEpoch: c.Epoch, Released: true}
	}
	return c, err
}

// ownedLocked is fenceLocked for a release: a claim its holder released
// already passes; s.mu is held.
func (s *Store) ownedLocked(tenant string, f store.Fence) (*store.Claim, error) {
	c, ok := s.claims[key{tenant, f.Key}]
	if !ok {
		return nil, &store.FencedError{Key: f.Key, Holder: f.Holder, Epoch: f.Epoch}
	}
	if c.Holder != f.Holder || c.Epoch != f.Epoch {
		return nil, &store.FencedError{Key: f.Key, Holder: f.Holder, Epoch: f.Epoch, CurrentHolder: c.Holder, CurrentEpoch: c.Epoch}
	}
	return c, nil
}

// ClaimRelease implements [store.Store].
func (s *Store) ClaimRelease(ctx context.Context, p *store.ClaimReleaseParams) error {
	if err := store.Check(p); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	c, err := s.ownedLocked(p.Tenant, p.Fence)
	if err != nil {
		return err
	}
	k := key{p.Tenant, p.Fence.Key}
	if p.Remove {
		delete(s.claims, k)
		delete(s.released, k)
		return nil
	}
	if s.released[k] {
		return nil // released already: nothing changes
	}
	c.ExpiresAt = s.clock.Now()
	s.released[k] = true
	return nil
}

// ClaimRenew implements [store.Store].
func (s *Store) ClaimRenew(ctx context.Context, p *store.ClaimRenewParams) (*store.Claim, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	c, err := s.fenceLocked(p.Tenant, p.Fence)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	c.ExpiresAt = store.Time(now.Add(p.TTL))
	c.HeartbeatAt = now
	cc := *c
	return &cc, nil
}

// EventList implements [store.Store].
func (s *Store) EventList(ctx context.Context, p *store.EventListParams) ([]*store.EventRecord, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []*store.EventRecord
	k := key{p.Tenant, p.RunID}
	evs := s.events[k]
	// The event numbered seq is the list's (seq-1)-th.
	for i := int(max(0, min(p.AfterSeq, int64(evs.len())))); i < evs.len(); i++ {
		if p.Limit > 0 && len(out) >= p.Limit {
			break
		}
		if err := checkJSON("event", fmt.Sprintf("%s#%d", p.RunID, i+1), evs.at(i).data); err != nil {
			return nil, err
		}
		out = append(out, evs.record(k, i))
	}
	return out, nil
}

// LedgerGet implements [store.Store].
func (s *Store) LedgerGet(ctx context.Context, p *store.LedgerGetParams) (*store.LedgerEntry, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	e, ok := s.ledger[key{p.Tenant, p.RunID}][p.CallID]
	if !ok {
		return nil, &store.NotFoundError{Kind: "ledger", ID: p.RunID + "/" + p.CallID}
	}
	return cloneEntry(e)
}

// LedgerList implements [store.Store].
func (s *Store) LedgerList(ctx context.Context, p *store.LedgerListParams) ([]*store.LedgerEntry, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []*store.LedgerEntry
	ids := p.RunIDs
	if len(ids) == 0 {
		ids = []string{p.RunID}
	}
	for _, id := range ids {
		for _, e := range s.ledger[key{p.Tenant, id}] {
			c, err := cloneEntry(e)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.RunID != b.RunID {
			return a.RunID < b.RunID
		}
		if a.Turn != b.Turn {
			return a.Turn < b.Turn
		}
		if a.Index != b.Index {
			return a.Index < b.Index
		}
		return a.CallID < b.CallID
	})
	return out, nil
}

// OnceGet implements [store.Store].
func (s *Store) OnceGet(ctx context.Context, p *store.OnceGetParams) (*store.OnceRecord, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	r, ok := s.once[key{p.Tenant, p.Key}]
	if !ok {
		return nil, &store.NotFoundError{Kind: "once", ID: p.Key}
	}
	c := *r
	c.Value = cloneJSON(r.Value)
	return &c, nil
}

// OncePut implements [store.Store].
func (s *Store) OncePut(ctx context.Context, p *store.OncePutParams) (*store.OnceRecord, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	k := key{p.Tenant, p.Key}
	if _, ok := s.once[k]; ok {
		return nil, &store.ExistsError{Kind: "once", ID: p.Key}
	}
	r := &store.OnceRecord{Tenant: p.Tenant, Key: p.Key, Value: cloneJSON(p.Value), CreatedAt: s.clock.Now()}
	s.once[k] = r
	c := *r
	c.Value = cloneJSON(r.Value)
	return &c, nil
}

// RunClaimNext implements [store.Store].
func (s *Store) RunClaimNext(ctx context.Context, p *store.RunClaimNextParams) (*store.Run, *store.Claim, error) {
	if err := store.Check(p); err != nil {
		return nil, nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, nil, err
	}
	defer s.mu.Unlock()
	now := s.clock.Now()
	var queued []*store.Run
	for k, r := range s.runs {
		if k.tenant != p.Tenant || len(p.AgentIDs) > 0 && !slices.Contains(p.AgentIDs, r.AgentID) {
			continue
		}
		c, claimed := s.claims[key{p.Tenant, store.RunClaimKey(r.ID)}]
		if claimed && c.ExpiresAt.After(now) {
			continue
		}
		switch {
		case r.Status == store.RunQueued:
		case r.Status == store.RunRunning && p.Stale && (claimed || !r.UpdatedAt.After(now.Add(-p.TTL))):
		default:
			continue
		}
		queued = append(queued, r)
	}
	if len(queued) == 0 {
		return nil, nil, &store.NotFoundError{Kind: "queued run", ID: p.Tenant}
	}
	slices.SortFunc(queued, func(a, b *store.Run) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	r := queued[0]
	ck := key{p.Tenant, store.RunClaimKey(r.ID)}
	c, ok := s.claims[ck]
	if !ok {
		c = &store.Claim{Tenant: p.Tenant, Key: ck.id}
		s.claims[ck] = c
	}
	c.Epoch++
	c.Holder = p.Holder
	c.ExpiresAt = store.Time(now.Add(p.TTL))
	c.HeartbeatAt = now
	delete(s.released, ck)
	r.Status = store.RunRunning
	r.WaitKind = ""
	r.Revision++
	r.UpdatedAt = now
	rc, err := cloneRun(r, true)
	if err != nil {
		return nil, nil, err
	}
	cc := *c
	return rc, &cc, nil
}

// RunCreate implements [store.Store].
func (s *Store) RunCreate(ctx context.Context, p *store.RunCreateParams) (*store.Run, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	k := key{p.Run.Tenant, p.Run.ID}
	if _, ok := s.runs[k]; ok {
		return nil, &store.ExistsError{Kind: "run", ID: p.Run.ID}
	}
	if pid := p.Run.ParentID; pid != "" {
		par, ok := s.runs[key{p.Run.Tenant, pid}]
		if !ok {
			return nil, &store.NotFoundError{Kind: "parent run", ID: pid}
		}
		// The root of the parent's tree too: a prune removes a finished
		// tree root first, and a child written under a removed root would
		// be a run of a tree whose budget is gone.
		if root := s.rootLocked(par); root != pid {
			if _, ok := s.runs[key{p.Run.Tenant, root}]; !ok {
				return nil, &store.NotFoundError{Kind: "root run", ID: root}
			}
		}
	}
	ck := key{p.Run.Tenant, store.RunClaimKey(p.Run.ID)}
	if p.Holder != "" {
		if _, ok := s.claims[ck]; ok {
			return nil, &store.ExistsError{Kind: "claim", ID: ck.id}
		}
	}
	r := *p.Run
	r.Checkpoint = cloneJSON(p.Run.Checkpoint)
	if r.Checkpoint == nil {
		r.Checkpoint = json.RawMessage("{}")
	}
	r.Meta = cloneJSON(p.Run.Meta)
	r.WaitKind = store.StoredWaitKind(r.Status, r.WaitKind)
	r.Log = nil
	for _, it := range p.Run.Log {
		r.Log = append(r.Log, cloneJSON(it))
	}
	r.Deadline = store.Time(r.Deadline)
	r.Revision = 1
	r.EventSeq = 0
	now := s.clock.Now()
	r.CreatedAt, r.UpdatedAt = now, now
	s.runs[k] = &r
	if p.Holder != "" {
		s.claims[ck] = &store.Claim{Tenant: ck.tenant, Key: ck.id, Holder: p.Holder, Epoch: store.CreatedClaimEpoch,
			ExpiresAt: store.Time(now.Add(p.TTL)), HeartbeatAt: now}
		delete(s.released, ck)
	}
	for _, ev := range p.Events {
		e := cloneEvent(ev)
		e.Tenant, e.RunID = r.Tenant, r.ID
		r.EventSeq++
		e.Seq = r.EventSeq
		e.Time = store.Time(e.Time)
		if e.Time.IsZero() {
			e.Time = now
		}
		s.eventsLocked(k).add(e)
	}
	if r.Status == store.RunQueued {
		s.notifyLocked(r.Tenant)
	}
	return cloneRun(&r, true)
}

// RunGet implements [store.Store].
func (s *Store) RunGet(ctx context.Context, p *store.RunGetParams) (*store.Run, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	r, ok := s.runs[key{p.Tenant, p.ID}]
	if !ok {
		return nil, &store.NotFoundError{Kind: "run", ID: p.ID}
	}
	return cloneRun(r, true)
}

// RunList implements [store.Store].
func (s *Store) RunList(ctx context.Context, p *store.RunListParams) ([]*store.Run, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	statuses := p.ListStatuses()
	now := p.Now
	if now.IsZero() {
		now = s.clock.Now()
	}
	var out []*store.Run
	var bad error // the first run that does not decode; it hides no other
	for k, r := range s.runs {
		if k.tenant != p.Tenant || !s.matchLocked(r, statuses, p.ParentID, p.Claim, now, extra{p.AgentID, p.WaitKind}) {
			continue
		}
		if p.After != nil && cmpRun(r, p.After, p.Order) <= 0 {
			continue
		}
		c, err := cloneRun(r, false)
		if err != nil {
			if bad == nil {
				bad = err
			}
			continue
		}
		if p.Summary {
			c.Checkpoint = nil
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *store.Run) int {
		return cmpRun(a, store.CursorOf(b, p.Order), p.Order)
	})
	if p.Limit > 0 && len(out) > p.Limit {
		out = out[:p.Limit]
	}
	return out, bad
}

// cmpRun compares r with the run at cursor c in order o: negative when r
// comes first.
func cmpRun(r *store.Run, c *store.RunCursor, o store.RunOrder) int {
	if o == store.RunsWaitingLongest {
		if x := r.UpdatedAt.Compare(c.At); x != 0 {
			return x
		}
		return strings.Compare(r.ID, c.ID)
	}
	if x := c.At.Compare(r.CreatedAt); x != 0 {
		return x
	}
	return strings.Compare(c.ID, r.ID)
}

// extra are RunList's filters that RunCount does not have.
type extra struct{ agentID, waitKind string }

// ClaimList implements [store.Store].
func (s *Store) ClaimList(ctx context.Context, p *store.ClaimListParams) ([]*store.Claim, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []*store.Claim{}
	if p.HolderPrefix != "" {
		for k, c := range s.claims {
			if k.tenant == p.Tenant && strings.HasPrefix(c.Holder, p.HolderPrefix) && !c.ExpiresAt.After(p.ExpiredBy) {
				cc := *c
				out = append(out, &cc)
			}
		}
		slices.SortFunc(out, func(a, b *store.Claim) int {
			if c := a.ExpiresAt.Compare(b.ExpiresAt); c != 0 {
				return c
			}
			return strings.Compare(a.Key, b.Key)
		})
		return out[:min(len(out), p.Limit)], nil
	}
	seen := map[string]bool{}
	for _, k := range p.Keys {
		if c, ok := s.claims[key{p.Tenant, k}]; ok && !seen[k] {
			seen[k] = true
			cc := *c
			out = append(out, &cc)
		}
	}
	slices.SortFunc(out, func(a, b *store.Claim) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// matchLocked applies the filters shared by RunList and RunCount.
func (s *Store) matchLocked(r *store.Run, statuses []store.RunStatus, parentID string, cf store.ClaimFilter, now time.Time, f extra) bool {
	if len(statuses) > 0 && !slices.Contains(statuses, r.Status) || parentID != "" && r.ParentID != parentID {
		return false
	}
	if f.agentID != "" && r.AgentID != f.agentID || f.waitKind != "" && r.WaitKind != f.waitKind {
		return false
	}
	if cf.State == store.ClaimAny {
		return true
	}
	c, ok := s.claims[key{r.Tenant, store.RunClaimKey(r.ID)}]
	live := ok && c.ExpiresAt.After(now)
	if cf.State == store.ClaimLive {
		return live && strings.HasPrefix(c.Holder, cf.HolderPrefix)
	}
	return !live || cf.HolderPrefix != "" && strings.HasPrefix(c.Holder, cf.HolderPrefix)
}

// RunCount implements [store.Store].
func (s *Store) RunCount(ctx context.Context, p *store.RunCountParams) ([]store.RunCount, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	now := p.Now
	if now.IsZero() {
		now = s.clock.Now()
	}
	type group struct {
		status store.RunStatus
		kind   string
	}
	n := map[group]int64{}
	for k, r := range s.runs {
		if k.tenant == p.Tenant && s.matchLocked(r, p.Statuses, p.ParentID, p.Claim, now, extra{}) {
			n[group{r.Status, r.WaitKind}]++
		}
	}
	out := make([]store.RunCount, 0, len(n))
	for g, c := range n {
		out = append(out, store.RunCount{Status: g.status, WaitKind: g.kind, N: c})
	}
	store.SortCounts(out)
	return out, nil
}

// RunPrune implements [store.Store].
func (s *Store) RunPrune(ctx context.Context, p *store.RunPruneParams) (*store.RunPruneResult, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	now := s.clock.Now()
	inUse := map[string]bool{} // sessions still in use
	for k, r := range s.runs {
		if k.tenant == p.Tenant && r.SessionID != "" && (!r.Status.Terminal() || !r.UpdatedAt.Before(p.FinishedBefore)) {
			inUse[r.SessionID] = true
		}
	}
	openTree := map[string]bool{} // trees (by root) with a run that is not finished
	for k, r := range s.runs {
		if k.tenant == p.Tenant && !r.Status.Terminal() {
			openTree[s.rootLocked(r)] = true
		}
	}
	var cand []*store.Run
	for k, r := range s.runs {
		if k.tenant != p.Tenant || !r.Status.Terminal() || !r.UpdatedAt.Before(p.FinishedBefore) {
			continue
		}
		if p.After != nil && cmpRun(r, p.After, store.RunsWaitingLongest) <= 0 {
			continue
		}
		if !p.Sessions && r.SessionID != "" && inUse[r.SessionID] {
			continue
		}
		if openTree[s.rootLocked(r)] || s.keepLocked(r, now) {
			continue
		}
		cand = append(cand, r)
	}
	slices.SortFunc(cand, func(a, b *store.Run) int {
		return cmpRun(a, store.CursorOf(b, store.RunsWaitingLongest), store.RunsWaitingLongest)
	})
	res := &store.RunPruneResult{RunIDs: []string{}}
	if len(cand) > p.Limit {
		cand, res.More = cand[:p.Limit], true
	}
	pruned := map[string]bool{}
	for _, r := range cand {
		pruned[r.ID] = true
	}
	if !p.DryRun && len(cand) > 0 {
		// The claims the runs own (their own, their trees' child-budget
		// places, their cancel requests): a test store, a scan is fine.
		for ck := range s.claims {
			if ck.tenant != p.Tenant {
				continue
			}
			kind, rest, _ := strings.Cut(ck.id, ":")
			id := rest
			if kind == "children" || kind == "cancel" {
				if i := strings.LastIndexByte(rest, ':'); i >= 0 {
					id = rest[:i]
				}
			}
			if pruned[id] && store.RunOwnsClaim(ck.id, id) {
				delete(s.claims, ck)
				delete(s.released, ck)
			}
		}
	}
	for _, r := range cand {
		k := key{p.Tenant, r.ID}
		res.Last = store.CursorOf(r, store.RunsWaitingLongest)
		res.RunIDs = append(res.RunIDs, r.ID)
		res.LedgerEntries += int64(len(s.ledger[k]))
		res.Events += int64(s.events[k].len())
		if !p.DryRun {
			delete(s.runs, k)
			delete(s.ledger, k)
			delete(s.events, k)
		}
	}
	return res, nil
}

// rootLocked is the id of the root of r's tree: its topmost ancestor still
// stored, or the id of the first ancestor already removed (the SQL stores
// copy a child's root from its parent when it is written, which is the
// same as long as no run of a tree that is not finished is removed).
func (s *Store) rootLocked(r *store.Run) string {
	for r.ParentID != "" {
		p, ok := s.runs[key{r.Tenant, r.ParentID}]
		if !ok {
			return r.ParentID
		}
		r = p
	}
	return r.ID
}

// keepLocked reports whether a finished run must be kept whatever the
// policy: an unsettled call, a live claim (a run of its tree not finished
// is checked by the caller, for all runs at once).
func (s *Store) keepLocked(r *store.Run, now time.Time) bool {
	for _, e := range s.ledger[key{r.Tenant, r.ID}] {
		if e.State == store.LedgerStarted || e.State == store.LedgerUnknown {
			return true
		}
	}
	if c, ok := s.claims[key{r.Tenant, store.RunClaimKey(r.ID)}]; ok && c.ExpiresAt.After(now) {
		return true
	}
	return false
}

// RunWrite implements [store.Store]. All checks happen before any change,
// under one lock, so a failed write changes nothing.
func (s *Store) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	rk := key{p.Tenant, p.RunID}
	run, ok := s.runs[rk]
	if !ok {
		return nil, &store.NotFoundError{Kind: "run", ID: p.RunID}
	}
	var claim *store.Claim
	if p.Fence != nil {
		c, err := s.fenceLocked(p.Tenant, *p.Fence)
		if err != nil {
			return nil, err
		}
		claim = c
	}
	if u := p.Run; u != nil && run.Revision != u.ExpectedRevision {
		return nil, &store.ConflictError{Kind: "run", ID: p.RunID, Expected: u.ExpectedRevision, Actual: run.Revision}
	}
	entries := s.ledger[rk]
	for _, w := range p.Ledger {
		var actual int64
		if cur, ok := entries[w.Entry.CallID]; ok {
			actual = cur.Revision
		}
		if actual != w.ExpectedRevision {
			return nil, &store.ConflictError{Kind: "ledger", ID: p.RunID + "/" + w.Entry.CallID, Expected: w.ExpectedRevision, Actual: actual}
		}
	}

	now := s.clock.Now()
	// Values handed over by the engine (internal/handoff) are kept as they
	// are; anyone else's are copied, so that a caller's later change cannot
	// reach the store.
	own := handoff.Given(ctx, p)
	keep := cloneJSON
	if own {
		keep = func(b json.RawMessage) json.RawMessage { return b }
	}
	nev := len(p.Events) // p.AllEvents(), without making that slice
	for _, w := range p.Ledger {
		if w.Event != nil {
			nev++
		}
	}
	res := newResult(len(p.Ledger), nev)
	if p.Release {
		claim.ExpiresAt = now // as ClaimRelease
		s.released[key{p.Tenant, p.Fence.Key}] = true
	}
	if u := p.Run; u != nil {
		run.Status = u.Status
		run.WaitKind = store.StoredWaitKind(u.Status, u.WaitKind)
		run.Checkpoint = keep(u.Checkpoint)
		if run.Checkpoint == nil {
			run.Checkpoint = json.RawMessage("{}")
		}
		if u.Meta != nil {
			run.Meta = cloneJSON(u.Meta) // a caller's (agent change): always copied
		}
		for _, it := range u.Append {
			run.Log = append(run.Log, keep(it))
		}
		run.Revision++
		run.UpdatedAt = now
		if u.Status == store.RunQueued {
			s.notifyLocked(p.Tenant)
		}
	}
	if entries == nil && len(p.Ledger) > 0 {
		entries = map[string]*store.LedgerEntry{}
		s.ledger[rk] = entries
	}
	for _, w := range p.Ledger {
		cur := entries[w.Entry.CallID]
		var e *store.LedgerEntry
		if own && w.Entry != cur {
			e = handedEntry(w.Entry, cur)
		} else {
			e = copyEntry(w.Entry, cur) // validated by store.Check
		}
		e.StartedAt, e.CommittedAt = store.Time(e.StartedAt), store.Time(e.CommittedAt)
		if cur, ok := entries[e.CallID]; ok {
			e.CreatedAt = cur.CreatedAt
		} else {
			e.CreatedAt = now
		}
		e.UpdatedAt = now
		e.Revision = w.ExpectedRevision + 1
		entries[e.CallID] = e
		res.Ledger = append(res.Ledger, e) // shared: see below
	}
	var evs *eventList
	if nev > 0 {
		evs = s.eventsLocked(rk)
	}
	add := func(ev *store.EventRecord) {
		e := ev
		if !own {
			e = cloneEvent(ev)
		}
		e.Tenant, e.RunID = p.Tenant, p.RunID
		run.EventSeq++
		e.Seq = run.EventSeq
		e.Time = store.Time(e.Time)
		if e.Time.IsZero() {
			e.Time = now
		}
		evs.add(e)
		res.Events = append(res.Events, e) // its Data is the stored bytes
	}
	for _, ev := range p.Events { // in p.AllEvents() order
		add(ev)
	}
	for _, w := range p.Ledger {
		if w.Event != nil {
			add(w.Event)
		}
	}
	// The result's entries are the stored ones, and its events share their
	// Data with the stored ones, not copies: the store never changes a
	// stored entry or event in place (a write replaces an entry; an event
	// is never changed), and a write's result is for reading
	// (RunWriteResult). Reads (LedgerList, EventList, RunGet) return
	// copies that share nothing.
	if p.Run != nil {
		// Just written from checked input: a copy, without checking again.
		// Its JSON is shared, as the entries'.
		rc := *run
		rc.Log, rc.LogLen = nil, len(run.Log)
		res.Run = &rc
	}
	return res, nil
}

// SessionAppend implements [store.Store].
func (s *Store) SessionAppend(ctx context.Context, p *store.SessionAppendParams) (int64, error) {
	if err := store.Check(p); err != nil {
		return 0, err
	}
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if p.Fence != nil {
		if _, err := s.fenceLocked(p.Tenant, *p.Fence); err != nil {
			return 0, err
		}
	}
	k := key{p.Tenant, p.SessionID}
	ss, ok := s.sessions[k]
	if !ok {
		ss = &session{snapshots: map[int64]json.RawMessage{}}
	}
	if ss.revision != p.ExpectedRevision {
		return 0, &store.ConflictError{Kind: "session", ID: p.SessionID, Expected: p.ExpectedRevision, Actual: ss.revision}
	}
	for _, it := range p.Items {
		ss.revision++
		ss.entries = append(ss.entries, store.SessionEntry{Seq: ss.revision, RunID: p.RunID, Turn: p.Turn, Item: cloneJSON(it)})
	}
	s.sessions[k] = ss
	return ss.revision, nil
}

// SessionLoad implements [store.Store].
func (s *Store) SessionLoad(ctx context.Context, p *store.SessionLoadParams) (*store.SessionState, error) {
	if err := store.Check(p); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	st := &store.SessionState{Tenant: p.Tenant, SessionID: p.SessionID}
	ss, ok := s.sessions[key{p.Tenant, p.SessionID}]
	if !ok {
		ss = &session{}
	}
	st.Revision = ss.revision
	if p.AsOf > ss.revision {
		return nil, &store.InvalidError{Field: "AsOf",
			Reason: fmt.Sprintf("%d exceeds the journal revision %d of session %s", p.AsOf, ss.revision, p.SessionID)}
	}
	if p.AsOf > 0 {
		st.Revision = p.AsOf
	}
	from := int64(0) // entries[from:st.Revision] are loaded
	if p.Last == 0 || p.WithSnapshot {
		for rev, data := range ss.snapshots {
			if rev > st.SnapshotRevision && rev <= st.Revision {
				st.SnapshotRevision, st.Snapshot = rev, data
			}
		}
	}
	if p.Last > 0 && st.SnapshotRevision <= st.Revision-int64(p.Last) {
		// The last Last entries: no snapshot covers any of them.
		st.SnapshotRevision, st.Snapshot = 0, nil
		from = st.Revision - int64(p.Last)
	}
	if st.Snapshot != nil {
		if err := checkJSON("session snapshot", p.SessionID, st.Snapshot); err != nil {
			return nil, err
		}
		st.Snapshot = cloneJSON(st.Snapshot)
		from = st.SnapshotRevision
	}
	from = max(from, 0)
	for _, e := range ss.entries[from:st.Revision] {
		if err := checkJSON("session", fmt.Sprintf("%s#%d", p.SessionID, e.Seq), e.Item); err != nil {
			return nil, err
		}
		e.Item = cloneJSON(e.Item)
		st.Entries = append(st.Entries, e)
	}
	return st, nil
}

// SessionSnapshotPut implements [store.Store].
func (s *Store) SessionSnapshotPut(ctx context.Context, p *store.SessionSnapshotPutParams) error {
	if err := store.Check(p); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	ss, ok := s.sessions[key{p.Tenant, p.SessionID}]
	if !ok || p.Revision > ss.revision {
		return &store.InvalidError{Field: "Revision", Reason: "beyond the journal"}
	}
	if _, ok := ss.snapshots[p.Revision]; !ok {
		ss.snapshots[p.Revision] = cloneJSON(p.Data)
	}
	return nil
}

// QueueWatch implements [store.QueueNotifier]: the channel is closed when
// a run of tenant is created queued or written back to queued.
func (s *Store) QueueWatch(ctx context.Context, tenant string) (<-chan struct{}, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	ch, ok := s.watch[tenant]
	if !ok {
		ch = make(chan struct{})
		s.watch[tenant] = ch
	}
	return ch, nil
}

func (s *Store) notifyLocked(tenant string) {
	if ch, ok := s.watch[tenant]; ok {
		close(ch)
		delete(s.watch, tenant)
	}
}

var _ store.QueueNotifier = (*Store)(nil)

var _ store.WaitingStamper = (*Store)(nil)

// WaitingStamp implements [store.WaitingStamper] (by reading every run and
// claim of the tenant: this store is for tests and small programs).
func (s *Store) WaitingStamp(ctx context.Context, tenant string, now time.Time) (string, error) {
	if tenant == "" {
		return "", &store.InvalidError{Field: "tenant", Reason: "empty"}
	}
	if err := s.lock(ctx); err != nil {
		return "", err
	}
	defer s.mu.Unlock()
	if now.IsZero() {
		now = s.clock.Now()
	}
	var maxExp time.Time
	live := 0
	// held sums a hash of each claim's holder, epoch and liveness: a claim
	// taken (a new epoch) and released (not live) between two stamps
	// changes it, as does one released and another taken, while longer
	// claims stay live and the live count is the same (a Decide writes the
	// ledger of a waiting run, not the run).
	var held uint64
	for k, c := range s.claims {
		if k.tenant != tenant {
			continue
		}
		if c.ExpiresAt.After(maxExp) {
			maxExp = c.ExpiresAt
		}
		h := fnv.New64a()
		fmt.Fprintf(h, "%s\x00%s\x00%d\x00%t", c.Key, c.Holder, c.Epoch, c.ExpiresAt.After(now))
		held += h.Sum64()
		if c.ExpiresAt.After(now) {
			live++
		}
	}
	var newest *store.Run
	counts := map[string]int{}
	for k, r := range s.runs {
		if k.tenant != tenant || (r.Status != store.RunInterrupted && r.Status != store.RunRunning) {
			continue
		}
		counts[string(r.Status)+"/"+r.WaitKind]++
		if newest == nil || cmpRun(r, store.CursorOf(newest, store.RunsWaitingLongest), store.RunsWaitingLongest) > 0 {
			newest = r
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d|%d|%x|", maxExp.UnixNano(), live, held)
	if newest != nil {
		fmt.Fprintf(&b, "%d/%s", newest.UpdatedAt.UnixNano(), newest.ID)
	}
	b.WriteString("|")
	for _, g := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(&b, "%s=%d,", g, counts[g])
	}
	return b.String(), nil
}
