package actoviq_test

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
	"sync/atomic"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storepg"
	"github.com/actoviq/actoviq-go/tool"
)

// lostReply answers the first write that commits a call with an error
// whose outcome is not known (as a connection lost during COMMIT): after
// making the write (committed, the answer lost) or without making it
// (the COMMIT never reached the server).
type lostReply struct {
	store.Store
	made    bool // the write is made before the error
	changed bool // ... with another result than the one the engine wrote
	hit     atomic.Int64
}

func (l *lostReply) RunWrite(ctx context.Context, p *store.RunWriteParams) (*store.RunWriteResult, error) {
	for _, w := range p.Ledger {
		if w.Entry.State == store.LedgerCommitted && l.hit.Add(1) == 1 {
			if l.made {
				q := p
				if l.changed {
					en := *w.Entry
					en.Result = json.RawMessage(`{"content":"someone else's"}`)
					q = &store.RunWriteParams{Tenant: p.Tenant, RunID: p.RunID, Fence: p.Fence,
						Ledger: []store.LedgerWrite{{Entry: &en, ExpectedRevision: w.ExpectedRevision}}}
				}
				if _, err := l.Store.RunWrite(ctx, q); err != nil {
					return nil, err
				}
			}
			return nil, errors.New("injected: connection lost during COMMIT")
		}
	}
	return l.Store.RunWrite(ctx, p)
}

// A tool's result whose write ends with an error of unknown outcome is
// read back under the drive's fence: committed (the record at the
// revision after the one the write expected, as written), the drive goes
// on with it; not there, the write is made again, with the same revision
// and fence (one of the two commits at most). Either way the run
// completes, the tool ran once, and the call is not sent to
// reconciliation. On main the drive stopped with the error and the call
// was left to reconciliation (or its result, committed, unknown to the
// drive).
func TestUnknownCommitOutcomeIsReadBack(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		for _, made := range []bool{true, false} {
			name := "not made"
			if made {
				name = "made"
			}
			t.Run(name, func(t *testing.T) {
				l := &lostReply{Store: st, made: made}
				rt, err := actoviq.New(l, &actoviq.Config{Holder: "A"})
				if err != nil {
					t.Fatal(err)
				}
				defer rt.Close()
				pay := &payTool{name: "pay"}
				a := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Provider: scripted.New(
					scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`)}}, scripted.Turn{Text: "done"}),
					Tools: []toolT{pay}}
				id := "u-" + name
				res, err := rt.Run(context.Background(), a, &actoviq.Input{RunID: id, Items: input("pay").Items})
				// made: read back committed, not sent again; not made: sent again once.
				if want := map[bool]int64{true: 1, false: 2}[made]; l.hit.Load() != want {
					t.Fatalf("%d writes of the result, want %d", l.hit.Load(), want)
				}
				if err != nil || res.Status != actoviq.StatusCompleted {
					t.Fatalf("Run: %+v %v, want it completed", res, err)
				}
				if pay.count() != 1 {
					t.Fatalf("the tool ran %d times", pay.count())
				}
				info, err := rt.Get(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				if len(info.Ledger) != 1 || info.Ledger[0].State != store.LedgerCommitted || info.Ledger[0].Revision != 2 { // started with the response (drive_fold.go), committed
					t.Fatalf("ledger %+v", info.Ledger)
				}
				evs, err := rt.Events(context.Background(), id, nil)
				if err != nil {
					t.Fatal(err)
				}
				var committed int
				for _, ev := range evs {
					if ev.Type == actoviq.EvToolCommitted {
						committed++
					}
				}
				if committed != 1 || len(toolResults(t, info)) != 1 {
					t.Fatalf("%d tool.committed events, %d results", committed, len(toolResults(t, info)))
				}
			})
		}
	})
}

// A record read back at the revision after the one the write expected
// but not as written (another result) is not taken for the write's: the
// error stands and the drive stops, the call not recorded with a result
// the tool did not return.
func TestUnknownCommitOutcomeReadBackOfAnotherRecord(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		l := &lostReply{Store: st, made: true, changed: true}
		rt, err := actoviq.New(l, &actoviq.Config{Holder: "A"})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		pay := &payTool{name: "pay"}
		a := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Provider: scripted.New(
			scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`)}}, scripted.Turn{Text: "done"}),
			Tools: []toolT{pay}}
		_, err = rt.Run(context.Background(), a, &actoviq.Input{RunID: "u-other", Items: input("pay").Items})
		if err == nil || !strings.Contains(err.Error(), "injected: connection lost") {
			t.Fatalf("Run: %v, want the lost connection", err)
		}
		if l.hit.Load() != 1 || pay.count() != 1 {
			t.Fatalf("%d writes of the result, the tool ran %d times", l.hit.Load(), pay.count())
		}
	})
}

// cutProxy relays TCP connections to a PostgreSQL server and, once armed,
// cuts the connection that sends a message holding marker: it relays that
// message to the server and then closes both sides without relaying the
// answer ("forward": the server commits, the client never hears), or
// closes them without relaying it ("drop": the server never sees it).
// Either way the client's write ends with a lost connection: its outcome
// is not known to it.
type cutProxy struct {
	ln     net.Listener
	target string
	marker []byte
	mode   string
	armed  atomic.Bool
	cuts   atomic.Int64
}

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.pipe(c)
	}
}

func (p *cutProxy) pipe(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	var cut atomic.Bool
	go func() { // server to client, until the cut
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
			if bytes.Contains(chunk, p.marker) && p.armed.CompareAndSwap(true, false) {
				cut.Store(true)
				if p.mode == "forward" {
					_, _ = s.Write(chunk)
				}
				p.cuts.Add(1)
				c.Close()
				// The server reads what it was sent before the end of the
				// stream: a forwarded write is executed and committed.
				s.(*net.TCPConn).CloseWrite()
				return
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

// markedTool is a side effect whose result carries a marker the proxy
// looks for: the write of its result is the one cut.
type markedTool struct {
	payTool
	marker string
	arm    func()
}

func (m *markedTool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	if _, err := m.payTool.Call(ctx, args); err != nil {
		return tool.Result{}, err
	}
	m.arm()
	return tool.Result{Content: m.marker}, nil
}

// TestUnknownCommitOutcomeIsReadBack on a real PostgreSQL server, the
// connection cut by a proxy as the write of the tool's result is sent:
// relayed to the server and then cut (committed, the answer lost), or cut
// before it (never seen). The run completes, the tool ran once, its
// result is recorded once. On main Run failed with the lost connection and
// the call went to reconciliation.
func TestUnknownCommitOutcomePostgresCut(t *testing.T) {
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
			marker := "receipt-" + mode + "-5e2a91c7"
			p := &cutProxy{ln: ln, target: u.Host, marker: []byte(marker), mode: mode}
			go p.serve()
			pu := *u
			pu.Host = ln.Addr().String()
			raw := make([]byte, 6)
			if _, err := rand.Read(raw); err != nil {
				t.Fatal(err)
			}
			schema := "t_cut_" + hex.EncodeToString(raw)
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
			pay := &markedTool{payTool: payTool{name: "pay"}, marker: marker, arm: func() { p.armed.Store(true) }}
			a := &actoviq.AgentSpec{ID: "payer", Model: "scripted-1", Provider: scripted.New(
				scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`)}}, scripted.Turn{Text: "done"}),
				Tools: []toolT{pay}}
			res, err := rt.Run(context.Background(), a, &actoviq.Input{RunID: "cut-" + mode, Items: input("pay").Items})
			if p.cuts.Load() != 1 {
				t.Fatalf("%d connections cut, want 1", p.cuts.Load())
			}
			if en, gerr := st.LedgerGet(context.Background(), &store.LedgerGetParams{Tenant: store.DefaultTenant, RunID: "cut-" + mode, CallID: "c1"}); gerr == nil {
				t.Logf("after the run: the call %s at revision %d", en.State, en.Revision)
			}
			if err != nil || res.Status != actoviq.StatusCompleted {
				t.Fatalf("Run: %+v %v, want it completed", res, err)
			}
			if pay.count() != 1 {
				t.Fatalf("the tool ran %d times", pay.count())
			}
			info, err := rt.Get(context.Background(), "cut-"+mode)
			if err != nil {
				t.Fatal(err)
			}
			if len(info.Ledger) != 1 || info.Ledger[0].State != store.LedgerCommitted || info.Ledger[0].Revision != 2 ||
				!strings.Contains(string(info.Ledger[0].Result), marker) {
				t.Fatalf("ledger %+v", info.Ledger)
			}
			evs, err := rt.Events(context.Background(), "cut-"+mode, nil)
			if err != nil {
				t.Fatal(err)
			}
			var committed int
			for _, ev := range evs {
				if ev.Type == actoviq.EvToolCommitted {
					committed++
				}
			}
			if committed != 1 {
				t.Fatalf("%d tool.committed events", committed)
			}
		})
	}
}
