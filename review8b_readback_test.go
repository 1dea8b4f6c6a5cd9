package actoviq_test

// review8b: attacks on a9a61b1 (a ledger write whose outcome is not known
// is read back: committed, sent again, or left to reconciliation).

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	neturl "net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storepg"
	"github.com/actoviq/actoviq-go/tool"
	"github.com/jackc/pgx/v5/pgxpool"
)

// unknownOnce answers the first write that matches with an error whose
// outcome is not known, after doing one of:
//   - "made": the write is made first (committed, the answer lost);
//   - "lost": nothing is written;
//   - "late": nothing yet; the write is made after the next read of a
//     ledger record returned (a first try still on its way that commits
//     after the read-back looked, before the write is sent again);
//   - "takeover": nothing is written, and another holder takes the run's
//     claim over first (the drive's heartbeat is stalled until it expired);
//   - "made-takeover": the write is made, then another holder takes over.
type unknownOnce struct {
	store.Store
	mode  string
	match func(p *store.RunWriteParams) bool
	ttl   time.Duration

	hit      atomic.Int64
	writes   atomic.Int64 // writes that matched, the hit included
	stall    atomic.Bool
	mu       sync.Mutex
	held     *store.RunWriteParams
	heldErr  error
	takenBy  *store.Claim
	takeover error
}

func (u *unknownOnce) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	if !u.match(p) {
		return u.Store.RunWrite(ctx, p)
	}
	u.writes.Add(1)
	if u.hit.Add(1) != 1 {
		return u.Store.RunWrite(ctx, p)
	}
	switch u.mode {
	case "made", "made-takeover":
		if _, err := u.Store.RunWrite(ctx, p); err != nil {
			return nil, err
		}
	case "late":
		u.mu.Lock()
		u.held = p
		u.mu.Unlock()
	}
	if strings.Contains(u.mode, "takeover") {
		u.takeOver(ctx, p.RunID)
	}
	return nil, errors.New("injected: connection lost during COMMIT")
}

// takeOver stalls the drive's heartbeat and takes the run's claim as B once
// it expired.
func (u *unknownOnce) takeOver(ctx context.Context, runID string) {
	u.stall.Store(true)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		c, err := u.Store.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: store.DefaultTenant, Key: store.RunClaimKey(runID), Holder: "B", TTL: time.Minute})
		if err == nil {
			u.mu.Lock()
			u.takenBy = c
			u.mu.Unlock()
			return
		}
		time.Sleep(u.ttl / 4)
	}
	u.mu.Lock()
	u.takeover = errors.New("B never took the claim over")
	u.mu.Unlock()
}

func (u *unknownOnce) ClaimRenew(ctx context.Context, p *store.ClaimRenewParams) (*store.Claim, error) {
	if u.stall.Load() && p.Fence.Holder != "B" {
		return nil, errors.New("injected: heartbeat stalled")
	}
	return u.Store.ClaimRenew(ctx, p)
}

func (u *unknownOnce) LedgerGet(ctx context.Context, p *store.LedgerGetParams) (*store.LedgerEntry, error) {
	en, err := u.Store.LedgerGet(ctx, p)
	u.mu.Lock()
	held := u.held
	u.held = nil
	u.mu.Unlock()
	if held != nil {
		_, u.heldErr = u.Store.RunWrite(ctx, held) // the first try lands now
	}
	return en, err
}

func ledgerWrites(p *store.RunWriteParams, callID string, state store.LedgerState) bool {
	for _, w := range p.Ledger {
		if w.Entry.CallID == callID && w.Entry.State == state {
			return true
		}
	}
	return false
}

// checkEvents: the run's events are gapless, each once, and each call has
// one tool.started and one tool.committed event.
func checkEvents(t *testing.T, st store.Store, runID string, calls ...string) {
	t.Helper()
	evs, err := st.EventList(context.Background(), &store.EventListParams{Tenant: store.DefaultTenant, RunID: runID})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	n := map[string]int{}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) || seen[ev.ID] {
			t.Fatalf("event %d: seq %d, id %s seen before %v", i, ev.Seq, ev.ID, seen[ev.ID])
		}
		seen[ev.ID] = true
		for _, c := range calls {
			if (ev.Type == actoviq.EvToolStarted || ev.Type == actoviq.EvToolCommitted) && strings.Contains(string(ev.Data), `"`+c+`"`) {
				n[ev.Type+" "+c]++
			}
		}
	}
	for _, c := range calls {
		if n[actoviq.EvToolStarted+" "+c] != 1 || n[actoviq.EvToolCommitted+" "+c] != 1 {
			t.Fatalf("call %s: %d tool.started, %d tool.committed events, want 1 and 1", c,
				n[actoviq.EvToolStarted+" "+c], n[actoviq.EvToolCommitted+" "+c])
		}
	}
}

// The write that starts a call (prepared -> started), its outcome not
// known: made, lost, or landing late (after the read-back looked, before
// the write is sent again). The tool runs only once the start is known
// committed, and once; the run completes; one tool.started event.
func TestReview8bUnknownStartIsReadBack(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		for _, mode := range []string{"made", "lost", "late"} {
			t.Run(mode, func(t *testing.T) {
				u := &unknownOnce{Store: st, mode: mode, match: func(p *store.RunWriteParams) bool {
					// With the model's response (drive_fold.go): read back too.
					return ledgerWrites(p, "c1", store.LedgerStarted)
				}}
				rt, err := actoviq.New(u, &actoviq.Config{Holder: "A"})
				if err != nil {
					t.Fatal(err)
				}
				defer rt.Close()
				pay := &payTool{name: "pay"}
				a := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Provider: scripted.New(
					scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`)}}, scripted.Turn{Text: "done"}),
					Tools: []toolT{pay}}
				id := "s-" + mode
				res, err := rt.Run(context.Background(), a, &actoviq.Input{RunID: id, Items: input("pay").Items})
				if u.hit.Load() == 0 {
					t.Fatal("no write matched")
				}
				if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 1 {
					t.Fatalf("Run: %+v %v, tool ran %d times (late write: %v)", res, err, pay.count(), u.heldErr)
				}
				info, err := rt.Get(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				if len(info.Ledger) != 1 || info.Ledger[0].State != store.LedgerCommitted || info.Ledger[0].Revision != 2 {
					t.Fatalf("ledger %+v", info.Ledger[0])
				}
				checkEvents(t, st, id, "c1")
			})
		}
	})
}

// A carried write: c1's result held and sent with c2's start (one write),
// its outcome not known. Both records are read back (or the write made
// again); each tool runs once, each call committed once.
func TestReview8bUnknownCarriedWriteIsReadBack(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		for _, mode := range []string{"made", "lost", "late"} {
			t.Run(mode, func(t *testing.T) {
				var carried atomic.Bool
				u := &unknownOnce{Store: st, mode: mode, match: func(p *store.RunWriteParams) bool {
					if p.Run == nil && ledgerWrites(p, "c2", store.LedgerStarted) {
						if ledgerWrites(p, "c1", store.LedgerCommitted) {
							carried.Store(true)
						}
						return true
					}
					return false
				}}
				rt, err := actoviq.New(u, &actoviq.Config{Holder: "A"})
				if err != nil {
					t.Fatal(err)
				}
				defer rt.Close()
				pay, pay2 := &payTool{name: "pay"}, &payTool{name: "pay2"}
				a := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Provider: scripted.New(
					scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`), call("c2", "pay2", `{"amount":2}`)}},
					scripted.Turn{Text: "done"}),
					Tools: []toolT{pay, pay2}}
				id := "c-" + mode
				res, err := rt.Run(context.Background(), a, &actoviq.Input{RunID: id, Items: input("pay").Items})
				if u.hit.Load() == 0 {
					t.Fatal("no write matched")
				}
				if !carried.Load() {
					t.Log("c1's result was not carried with c2's start")
				}
				if err != nil || res.Status != actoviq.StatusCompleted || pay.count() != 1 || pay2.count() != 1 {
					t.Fatalf("Run: %+v %v, tools ran %d, %d times", res, err, pay.count(), pay2.count())
				}
				info, err := rt.Get(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				// c1 created started with the response (drive_fold.go).
				for _, en := range info.Ledger {
					if want := map[string]int64{"c1": 2, "c2": 3}[en.CallID]; en.State != store.LedgerCommitted || en.Revision != want {
						t.Fatalf("ledger %s %s rev %d", en.CallID, en.State, en.Revision)
					}
				}
				checkEvents(t, st, id, "c1", "c2")
			})
		}
	})
}

// Another holder took the run over between the write and its read-back:
// a write that did not commit before the takeover must not be claimed
// committed, nor made again past the fence; one that did commit before it
// is the drive's. Either way the tool ran once and nobody's later write is
// overwritten.
func TestReview8bUnknownWriteAfterTakeover(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		for _, mode := range []string{"takeover", "made-takeover"} {
			t.Run(mode, func(t *testing.T) {
				ttl := 300 * time.Millisecond
				u := &unknownOnce{Store: st, mode: mode, ttl: ttl, match: func(p *store.RunWriteParams) bool {
					return p.Run == nil && ledgerWrites(p, "c1", store.LedgerCommitted)
				}}
				rt, err := actoviq.New(u, &actoviq.Config{Holder: "A", LeaseTTL: ttl})
				if err != nil {
					t.Fatal(err)
				}
				defer rt.Close()
				pay := &payTool{name: "pay"}
				a := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Provider: scripted.New(
					scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`)}}, scripted.Turn{Text: "done"}),
					Tools: []toolT{pay}}
				id := "t-" + mode
				res, err := rt.Run(context.Background(), a, &actoviq.Input{RunID: id, Items: input("pay").Items})
				u.mu.Lock()
				terr, by := u.takeover, u.takenBy
				u.mu.Unlock()
				if terr != nil || by == nil {
					t.Fatalf("takeover: %v", terr)
				}
				if err == nil && res.Status == actoviq.StatusCompleted {
					t.Fatalf("Run completed after B took the run over: %+v", res)
				}
				t.Logf("Run: %v", err)
				if pay.count() != 1 {
					t.Fatalf("the tool ran %d times", pay.count())
				}
				en, err := st.LedgerGet(context.Background(), &store.LedgerGetParams{Tenant: store.DefaultTenant, RunID: id, CallID: "c1"})
				if err != nil {
					t.Fatal(err)
				}
				switch mode {
				case "takeover": // never committed: still started, for B's reconciliation
					if en.State != store.LedgerStarted || en.Revision != 1 || u.writes.Load() > 2 { // created started (drive_fold.go)
						t.Fatalf("c1 %s rev %d after %d writes of the result", en.State, en.Revision, u.writes.Load())
					}
				case "made-takeover":
					if en.State != store.LedgerCommitted || en.Revision != 2 || u.writes.Load() != 1 {
						t.Fatalf("c1 %s rev %d after %d writes of the result", en.State, en.Revision, u.writes.Load())
					}
				}
				run, err := st.RunGet(context.Background(), &store.RunGetParams{Tenant: store.DefaultTenant, ID: id})
				if err != nil {
					t.Fatal(err)
				}
				if run.Status == store.RunCompleted {
					t.Fatalf("run %s", run.Status)
				}
				evs, err := st.EventList(context.Background(), &store.EventListParams{Tenant: store.DefaultTenant, RunID: id})
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for i, ev := range evs {
					if ev.Seq != int64(i+1) {
						t.Fatalf("event %d seq %d", i, ev.Seq)
					}
					if ev.Type == actoviq.EvToolCommitted {
						n++
					}
				}
				if want := map[string]int{"takeover": 0, "made-takeover": 1}[mode]; n != want {
					t.Fatalf("%d tool.committed events, want %d", n, want)
				}
			})
		}
	})
}

// lockedMarkedTool: its result carries the proxy's marker, and before it
// returns another session takes the run's advisory lock (the one
// run_write takes), so that the write of its result, relayed and then cut
// by the proxy, is still waiting on the server when the drive reads it
// back and sends it again.
type lockedMarkedTool struct {
	payTool
	marker string
	hold   func()
}

func (m *lockedMarkedTool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	if _, err := m.payTool.Call(ctx, args); err != nil {
		return tool.Result{}, err
	}
	m.hold()
	return tool.Result{Content: m.marker}, nil
}

// TestUnknownCommitOutcomePostgresCut with the first try still in flight:
// the result's write reaches the server and waits there behind the run's
// advisory lock (another session holds it) when the proxy cuts the
// connection; the drive reads the call back (unchanged) and sends the
// write again, which queues behind the first; the lock is released once
// both wait. One of the two commits: the run completes, the tool ran
// once, its result is recorded once with one tool.committed event.
func TestReview8bPostgresFirstTryInFlight(t *testing.T) {
	url := os.Getenv("ACTOVIQ_TEST_PG_URL")
	if url == "" {
		t.Skip("ACTOVIQ_TEST_PG_URL not set")
	}
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	marker := "receipt-inflight-77c1e0a4"
	p := &answerCutProxy{ln: ln, target: u.Host, marker: []byte(marker)}
	go p.serve()
	pu := *u
	pu.Host = ln.Addr().String()
	raw := make([]byte, 6)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	schema := "t_r8b_" + hex.EncodeToString(raw)
	st, err := storepg.Open(context.Background(), pu.String(), &storepg.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_, _ = st.Pool().Exec(context.Background(), `DROP SCHEMA "`+schema+`" CASCADE`)
		st.Close()
	}()
	rt, err := actoviq.New(st, &actoviq.Config{Holder: "A"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	const id = "inflight"
	lockKey := "actoviq-run/" + store.DefaultTenant + "/" + id
	bg := context.Background()
	var maxWaiting atomic.Int64
	released := make(chan struct{})
	// The locking session and the one that watches the lock are of a pool
	// of their own, straight to the server: the store's pool stays the
	// drive's.
	side, err := pgxpool.New(bg, url)
	if err != nil {
		t.Fatal(err)
	}
	defer side.Close()
	hold := func() {
		tx, err := side.Begin(bg)
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := tx.Exec(bg, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, lockKey); err != nil {
			t.Error(err)
			return
		}
		p.armed.Store(true)
		go func() { // release once the first try and the one sent again both wait (or after 5 s)
			defer close(released)
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) {
				var waiting int64
				if err := side.QueryRow(bg, `SELECT count(*) FROM pg_locks
					WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1
					  AND ((classid::bigint << 32) | objid::bigint) = hashtextextended($1, 0)`, lockKey).Scan(&waiting); err != nil {
					t.Error(err)
					break
				}
				if waiting > maxWaiting.Load() {
					maxWaiting.Store(waiting)
				}
				if waiting >= 2 {
					break
				}
				time.Sleep(2 * time.Millisecond)
			}
			_ = tx.Rollback(bg)
		}()
	}
	pay := &lockedMarkedTool{payTool: payTool{name: "pay"}, marker: marker, hold: hold}
	a := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Provider: scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`)}}, scripted.Turn{Text: "done"}),
		Tools: []toolT{pay}}
	res, err := rt.Run(bg, a, &actoviq.Input{RunID: id, Items: input("pay").Items})
	<-released
	t.Logf("cuts %d, at most %d sessions waited for the run's lock", p.cuts.Load(), maxWaiting.Load())
	if p.cuts.Load() != 1 {
		t.Fatalf("%d connections cut, want 1", p.cuts.Load())
	}
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("Run: %+v %v, want it completed", res, err)
	}
	if pay.count() != 1 {
		t.Fatalf("the tool ran %d times", pay.count())
	}
	en, err := st.LedgerGet(bg, &store.LedgerGetParams{Tenant: store.DefaultTenant, RunID: id, CallID: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if en.State != store.LedgerCommitted || en.Revision != 2 || !strings.Contains(string(en.Result), marker) { // created started (drive_fold.go)
		t.Fatalf("c1 %s rev %d %s", en.State, en.Revision, en.Result)
	}
	checkEvents(t, st, id, "c1")
}

// answerCutProxy relays TCP connections to a PostgreSQL server and, once
// armed, cuts the answers of the connection that sends a message holding
// marker: what the client sends is still relayed for a while (the whole
// pipeline of the write reaches the server), nothing the server answers
// is, and then the connection is closed on both sides.
type answerCutProxy struct {
	ln     net.Listener
	target string
	marker []byte
	armed  atomic.Bool
	cuts   atomic.Int64
}

func (p *answerCutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.pipe(c)
	}
}

func (p *answerCutProxy) pipe(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	var cut atomic.Bool
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := s.Read(buf)
			if n > 0 && !cut.Load() {
				if _, werr := c.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		c.Close()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if !cut.Load() && bytes.Contains(chunk, p.marker) && p.armed.CompareAndSwap(true, false) {
				cut.Store(true)
				p.cuts.Add(1)
				time.AfterFunc(100*time.Millisecond, func() {
					c.Close()
					s.(*net.TCPConn).CloseWrite()
				})
			}
			if _, werr := s.Write(chunk); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	c.Close()
	s.Close()
}

// nthCutProxy relays TCP connections to a PostgreSQL server and cuts the
// connection that sends the nth message holding marker: "forward" relays
// that message (and what follows it for a moment) and then closes both
// sides without relaying any answer; "drop" closes both sides without
// relaying it.
type nthCutProxy struct {
	ln     net.Listener
	target string
	marker []byte
	nth    int64
	mode   string
	seen   atomic.Int64
	cuts   atomic.Int64
}

func (p *nthCutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.pipe(c)
	}
}

func (p *nthCutProxy) pipe(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	var cut atomic.Bool
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := s.Read(buf)
			if n > 0 && !cut.Load() {
				if _, werr := c.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		c.Close()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if !cut.Load() && bytes.Contains(chunk, p.marker) && p.seen.Add(1) == p.nth {
				cut.Store(true)
				p.cuts.Add(1)
				if p.mode == "drop" {
					c.Close()
					s.Close()
					return
				}
				time.AfterFunc(100*time.Millisecond, func() {
					c.Close()
					s.(*net.TCPConn).CloseWrite()
				})
			}
			if _, werr := s.Write(chunk); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	c.Close()
	s.Close()
}

// A real PostgreSQL connection cut as the write that starts the call is
// sent (the call's arguments carry the marker: the first write holding
// it is the model's answer with the call's start, drive_fold.go):
// relayed and then cut, or cut before it. The start is read back (or
// made again); the tool runs once, after a start known committed; the
// run completes.
func TestReview8bPostgresCutStart(t *testing.T) {
	url := os.Getenv("ACTOVIQ_TEST_PG_URL")
	if url == "" {
		t.Skip("ACTOVIQ_TEST_PG_URL not set")
	}
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"forward", "drop"} {
		t.Run(mode, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			marker := "memo-start-" + mode + "-3b9d"
			p := &nthCutProxy{ln: ln, target: u.Host, marker: []byte(marker), nth: 1, mode: mode}
			go p.serve()
			pu := *u
			pu.Host = ln.Addr().String()
			raw := make([]byte, 6)
			if _, err := rand.Read(raw); err != nil {
				t.Fatal(err)
			}
			schema := "t_r8s_" + hex.EncodeToString(raw)
			st, err := storepg.Open(context.Background(), pu.String(), &storepg.Config{Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				_, _ = st.Pool().Exec(context.Background(), `DROP SCHEMA "`+schema+`" CASCADE`)
				st.Close()
			}()
			rt, err := actoviq.New(st, &actoviq.Config{Holder: "A"})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			pay := &payTool{name: "pay"}
			a := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Provider: scripted.New(
				scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1,"memo":"`+marker+`"}`)}}, scripted.Turn{Text: "done"}),
				Tools: []toolT{pay}}
			id := "cs-" + mode
			res, err := rt.Run(context.Background(), a, &actoviq.Input{RunID: id, Items: input("pay").Items})
			t.Logf("cuts %d (marker seen %d times)", p.cuts.Load(), p.seen.Load())
			if p.cuts.Load() != 1 {
				t.Fatalf("%d connections cut, want 1", p.cuts.Load())
			}
			if err != nil || res.Status != actoviq.StatusCompleted {
				t.Fatalf("Run: %+v %v, want it completed", res, err)
			}
			if pay.count() != 1 {
				t.Fatalf("the tool ran %d times", pay.count())
			}
			en, err := st.LedgerGet(context.Background(), &store.LedgerGetParams{Tenant: store.DefaultTenant, RunID: id, CallID: "c1"})
			if err != nil {
				t.Fatal(err)
			}
			if en.State != store.LedgerCommitted || en.Revision != 2 {
				t.Fatalf("c1 %s rev %d", en.State, en.Revision)
			}
			checkEvents(t, st, id, "c1")
		})
	}
}
