package storesqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

func r9aEntry(call string, idx int, st store.LedgerState) *store.LedgerEntry {
	return &store.LedgerEntry{Tenant: "t", RunID: "r", CallID: call, Turn: 1, Index: idx, Tool: "pay", Effect: "side-effect",
		State: st, IdempotencyKey: "r:" + call, ArgsDigest: "sha256:x", Args: json.RawMessage(`{"amount":5}`)}
}

// A run of many turns, each the model's answer with its first call's
// start (a row of several records and a started row at revision 1). The
// started first call's entry is read from its own row: LedgerGet does not
// walk the run's rows of several records for it.
func TestReview9aLedgerGetStartedFirstCall(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "s.db"), nil)
	if _, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: "r", AgentID: "a", AgentDigest: "d",
		Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	ev := func(typ, id string) *store.EventRecord {
		return &store.EventRecord{ID: id, Type: typ, Data: json.RawMessage(`{}`)}
	}
	const turns = 1500
	for i := 0; i < turns; i++ {
		a, b := fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)
		if _, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: "r",
			Events: []*store.EventRecord{ev("model.response", "m"+a), ev("tool.prepared", "p"+a)},
			Ledger: []store.LedgerWrite{{Entry: r9aEntry(b, 1, store.LedgerPrepared), Event: ev("tool.prepared", "p"+b)},
				{Entry: r9aEntry(a, 0, store.LedgerStarted), Event: ev("tool.started", "s"+a)}}}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(call string) (*store.LedgerEntry, time.Duration) {
		best := time.Duration(1 << 62)
		var en *store.LedgerEntry
		for k := 0; k < 20; k++ {
			t0 := time.Now()
			e, err := s.LedgerGet(ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: call})
			if d := time.Since(t0); d < best {
				best = d
			}
			if err != nil {
				t.Fatal(err)
			}
			en = e
		}
		return en, best
	}
	// a0: the first turn's started call (every row of several records of
	// the run is newer); b0 is in the first row's more.
	started, dStarted := get("a0")
	inMore, dMore := get(fmt.Sprintf("b%d", turns-1))
	if started.State != store.LedgerStarted || started.Revision != 1 || inMore.State != store.LedgerPrepared || inMore.Revision != 1 {
		t.Fatalf("entries %+v %+v", started, inMore)
	}
	t.Logf("LedgerGet: started a0 %v, prepared b%d (in the latest row's more) %v", dStarted, turns-1, dMore)
	if dStarted > 10*dMore {
		t.Fatalf("LedgerGet of a started entry at revision 1 took %v, %.0fx a prepared one in the run's latest row (%v): it walks the run's %d rows of several records",
			dStarted, float64(dStarted)/float64(dMore), dMore, turns)
	}
}
