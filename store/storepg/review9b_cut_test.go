package storepg_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storepg"
)

// cutProxy forwards TCP to the test server; when armed with k, the next
// connection's server-to-client stream (or client-to-server, with up)
// is cut after k more bytes: both sides closed.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	armed  int64 // -1: not armed
	up     bool
	conns  []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, armed: -1}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go p.pipe(c, s, true)
			go p.pipe(s, c, false)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
	})
	return p
}

func (p *cutProxy) arm(k int64, up bool) {
	p.mu.Lock()
	p.armed, p.up = k, up
	p.mu.Unlock()
}

func (p *cutProxy) pipe(from, to net.Conn, up bool) {
	buf := make([]byte, 1)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			p.mu.Lock()
			cut := false
			if p.armed >= 0 && p.up == up {
				if p.armed == 0 {
					cut = true
					p.armed = -1
				} else {
					p.armed--
				}
			}
			p.mu.Unlock()
			if cut {
				from.Close()
				to.Close()
				return
			}
			if _, werr := to.Write(buf[:n]); werr != nil {
				from.Close()
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				to.Close()
			}
			to.Close()
			return
		}
	}
}

// A run write whose connection is cut at every byte offset of its request
// or its answer (single writes and group-commit batches): a write that
// succeeded is stored, a BusyError (nothing written, call again as is)
// has stored nothing, and no answer is made up.
func TestReview9bRunWriteCutAtEveryByte(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	schema := newSchema(t)
	direct := openStore(t, schema, nil)
	u, err := url.Parse(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	px := newCutProxy(t, u.Host)
	u.Host = px.ln.Addr().String()
	s, err := storepg.Open(context.Background(), u.String(), &storepg.Config{Schema: schema, MaxConns: 4, CommitLeaders: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	n := 0
	tally := map[string]int{}
	defer func() { t.Logf("outcomes: %v", tally) }()
	for _, up := range []bool{false, true} {
		for _, batch := range []int{1, 4} {
			for k := int64(0); k < 1200; k += 11 {
				var runs []string
				for range batch {
					n++
					id := fmt.Sprint("r", n)
					if _, err := direct.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: id, Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`)}}); err != nil {
						t.Fatal(err)
					}
					runs = append(runs, id)
				}
				px.arm(k, up)
				var wg sync.WaitGroup
				errs := make([]error, batch)
				for i, id := range runs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
						defer cancel()
						_, errs[i] = s.RunWrite(wctx, &store.RunWriteParams{Tenant: "t", RunID: id, Ledger: []store.LedgerWrite{{
							Entry: &store.LedgerEntry{Tenant: "t", RunID: id, CallID: "c1", Tool: "charge", State: store.LedgerPrepared,
								Args: json.RawMessage(`{"cents":500}`)},
							Event: &store.EventRecord{Type: "tool.prepared", Data: json.RawMessage(`{"call_id":"c1"}`)}}}})
					}()
				}
				wg.Wait()
				px.arm(-1, false)
				for i, id := range runs {
					e, gerr := direct.LedgerGet(ctx, &store.LedgerGetParams{Tenant: "t", RunID: id, CallID: "c1"})
					stored := gerr == nil && e != nil
					if gerr != nil && !errors.Is(gerr, store.ErrNotFound) {
						t.Fatal(gerr)
					}
					switch {
					case errs[i] == nil:
						tally["ok"]++
					case errors.Is(errs[i], store.ErrBusy):
						tally["busy"]++
					default:
						tally[fmt.Sprint("error stored=", stored)]++
					}
					switch {
					case errs[i] == nil && !stored:
						t.Errorf("up=%v batch=%d cut at %d: write %s answered success, nothing stored", up, batch, k, id)
					case errors.Is(errs[i], store.ErrBusy) && stored:
						t.Errorf("up=%v batch=%d cut at %d: write %s answered %v (nothing written), but the entry is stored", up, batch, k, id, errs[i])
					}
				}
			}
		}
	}
}
