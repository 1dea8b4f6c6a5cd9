package storepg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/internal/eventrow"
)

// responseWrite is a model response of run r (revision rev) with k
// prepared calls prefix0..prefix(k-1) of turn 1.
func responseWrite(runID string, rev int64, prefix string, k int) *store.RunWriteParams {
	p := &store.RunWriteParams{Tenant: "t", RunID: runID,
		Run: &store.RunUpdate{ExpectedRevision: rev, Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`),
			Append: []json.RawMessage{json.RawMessage(`{"type":"message"}`)}},
		Events: []*store.EventRecord{{ID: "m", Type: "model.response", Data: json.RawMessage(`{"turn":1}`)}}}
	for i := range k {
		id := fmt.Sprintf("%s%d", prefix, i)
		p.Ledger = append(p.Ledger, store.LedgerWrite{
			Entry: &store.LedgerEntry{Tenant: "t", RunID: runID, CallID: id, Turn: 1, Index: i, Tool: "pay", Effect: "side-effect",
				State: store.LedgerPrepared, IdempotencyKey: "k-" + id, ArgsDigest: "d", Args: json.RawMessage(`{"n":1}`)},
			Event: &store.EventRecord{ID: "p" + id, Type: "tool.prepared", Data: json.RawMessage(`{"call":"` + id + `"}`)}})
	}
	return p
}

func createRun(t *testing.T, s *Store, id string) *store.Run {
	t.Helper()
	run, err := s.RunCreate(context.Background(), &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: id, Status: store.RunRunning,
		Checkpoint: json.RawMessage(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// TestEventRowOneRow: a model response with ten prepared calls is one
// events row (with the run row and the log row: three rows written), and
// reads back as eleven events and ten entries.
func TestEventRowOneRow(t *testing.T) {
	s := openPlanStore(t)
	ctx := context.Background()
	run := createRun(t, s, "r")
	before := s.Stats().RowsWritten
	if _, err := s.RunWrite(ctx, responseWrite("r", run.Revision, "c", 10)); err != nil {
		t.Fatal(err)
	}
	if rows := s.Stats().RowsWritten - before; rows != 3 {
		t.Fatalf("rows written by the response: %d, want 3", rows)
	}
	var n, first, last int64
	var calls []string
	if err := s.pool.QueryRow(ctx, s.q(`SELECT count(*), min(first_seq), max(seq),
		(SELECT more_calls FROM {{schema}}.events WHERE tenant = 't' AND run_id = 'r' LIMIT 1) FROM {{schema}}.events
		WHERE tenant = 't' AND run_id = 'r'`)).Scan(&n, &first, &last, &calls); err != nil {
		t.Fatal(err)
	}
	if n != 1 || first != 1 || last != 11 || !slices.Equal(calls, []string{"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"}) {
		t.Fatalf("events rows: %d, first_seq %d, seq %d, more_calls %q", n, first, last, calls)
	}
	evs, err := s.EventList(ctx, &store.EventListParams{Tenant: "t", RunID: "r"})
	if err != nil || len(evs) != 11 || evs[10].ID != "pc9" || evs[10].Seq != 11 {
		t.Fatalf("EventList: %d events, %v", len(evs), err)
	}
	list, err := s.LedgerList(ctx, &store.LedgerListParams{Tenant: "t", RunID: "r"})
	if err != nil || len(list) != 10 || list[9].CallID != "c9" || list[9].Revision != 1 {
		t.Fatalf("LedgerList: %d entries, %v", len(list), err)
	}
}

// TestEventRowStartedTail: a model response written with its first call's
// start (c0 new and started, its record last; its prepared event a plain
// one) is the rows of the two writes it replaces: run, log, one events
// row for the response and the other calls, one for c0's start, whose
// state is in the columns (run_write, migration 021).
func TestEventRowStartedTail(t *testing.T) {
	s := openPlanStore(t)
	ctx := context.Background()
	run := createRun(t, s, "r")
	p := responseWrite("r", run.Revision, "c", 10)
	c0 := p.Ledger[0]
	started := *c0.Entry
	started.State, started.Attempt = store.LedgerStarted, 1
	p.Events = append(p.Events, c0.Event)
	p.Ledger = append(p.Ledger[1:], store.LedgerWrite{Entry: &started, Event: &store.EventRecord{ID: "sc0", Type: "tool.started"}})
	before := s.Stats().RowsWritten
	res, err := s.RunWrite(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if rows := s.Stats().RowsWritten - before; rows != 4 {
		t.Fatalf("rows written: %d, want 4", rows)
	}
	if n := len(res.Events); n != 12 || res.Events[11].ID != "sc0" || res.Events[11].Seq != 12 || res.Events[1].ID != "pc0" {
		t.Fatalf("the write's events: %d", n)
	}
	var n int64
	var state string
	if err := s.pool.QueryRow(ctx, s.q(`SELECT count(*) FROM {{schema}}.events WHERE tenant = 't' AND run_id = 'r'`)).Scan(&n); err != nil || n != 2 {
		t.Fatalf("events rows: %d, %v", n, err)
	}
	if err := s.pool.QueryRow(ctx, s.q(`SELECT state FROM {{schema}}.events WHERE tenant = 't' AND run_id = 'r' AND seq = 12
		AND call_id = 'c0' AND first_seq IS NULL`)).Scan(&state); err != nil || state != "started" {
		t.Fatalf("c0's row: %q, %v", state, err)
	}
	evs, err := s.EventList(ctx, &store.EventListParams{Tenant: "t", RunID: "r"})
	if err != nil || len(evs) != 12 || evs[11].ID != "sc0" || evs[10].ID != "pc9" {
		t.Fatalf("EventList: %d events, %v", len(evs), err)
	}
	en, err := s.LedgerGet(ctx, &store.LedgerGetParams{Tenant: "t", RunID: "r", CallID: "c0"})
	if err != nil || en.State != store.LedgerStarted || en.Revision != 1 {
		t.Fatalf("LedgerGet c0: %+v, %v", en, err)
	}
}

// TestEventRowCorrupt: a row of several records that does not match its
// checksum, or whose more column is not what it should be, fails the reads
// that meet it with a DataError naming it.
func TestEventRowCorrupt(t *testing.T) {
	s := openPlanStore(t)
	ctx := context.Background()
	for i, c := range []struct {
		name, set string
		args      []any
	}{
		{"checksum", `more_crc = more_crc + 1`, nil},
		{"not JSON", `more = $3, more_crc = $4`, []any{"[{", eventrow.Sum([]byte("[{"))}},
		{"one record short", `first_seq = first_seq + 1`, nil},
		{"more_calls", `more_calls = ARRAY['c1', 'c0']`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := fmt.Sprintf("r%d", i)
			run := createRun(t, s, id)
			if _, err := s.RunWrite(ctx, responseWrite(id, run.Revision, "c", 2)); err != nil {
				t.Fatal(err)
			}
			if _, err := s.pool.Exec(ctx, s.q(`UPDATE {{schema}}.events SET `+c.set+` WHERE tenant = $1 AND run_id = $2`),
				append([]any{"t", id}, c.args...)...); err != nil {
				t.Fatal(err)
			}
			wantData := func(what string, err error) {
				t.Helper()
				var de *store.DataError
				if !errors.As(err, &de) || de.Kind != "event" || de.ID != id+"#3" {
					t.Fatalf("%s: %v, want a DataError naming event %s#3", what, err, id)
				}
			}
			_, err := s.EventList(ctx, &store.EventListParams{Tenant: "t", RunID: id})
			wantData("EventList", err)
			_, err = s.LedgerGet(ctx, &store.LedgerGetParams{Tenant: "t", RunID: id, CallID: "c0"})
			wantData("LedgerGet", err)
			_, err = s.LedgerList(ctx, &store.LedgerListParams{Tenant: "t", RunID: id})
			wantData("LedgerList", err)
		})
	}
}

// TestCallLookupPlan: a run of 100,000 events (one per call) and 2,000
// rows of several records, and 1,000 other runs whose rows name the same
// call ids: a model response's write (ten revision checks of new calls)
// and LedgerGet find a call by index (events_by_call, events_more_calls),
// reading neither the run's history nor the other runs' rows.
func TestCallLookupPlan(t *testing.T) {
	s := openPlanStore(t)
	ctx := context.Background()
	run := createRun(t, s, "big")
	small := createRun(t, s, "small")
	for i, q := range []string{
		`INSERT INTO {{schema}}.events (tenant, run_id, seq, id, parent_run_id, trace_id, span_id, type, time,
			call_id, turn, idx, tool, effect, state, idempotency_key, attempt, args_digest, holder, epoch,
			entry_rev, entry_created, entry_updated)
		SELECT 't', 'big', n, 'e' || n, '', 'tr', 'sp', 'tool.committed', now(), 'k' || n, n, 0, 'look', 'read', 'committed',
			'key' || n, 1, 'd', 'h', 1, 3, now(), now()
		FROM generate_series(1, 100000) n`,
		`INSERT INTO {{schema}}.events (tenant, run_id, seq, id, parent_run_id, trace_id, span_id, type, time,
			entry_updated, first_seq, more, more_crc, more_calls)
		SELECT 't', 'big', 100000 + 3 * n, 'm' || n, '', 'tr', 'sp', 'model.response', now(), now(), 100000 + 3 * n - 2, '[]', 0,
			ARRAY['m' || n || '_0', 'm' || n || '_1']
		FROM generate_series(1, 2000) n`,
		`INSERT INTO {{schema}}.events (tenant, run_id, seq, id, parent_run_id, trace_id, span_id, type, time,
			entry_updated, first_seq, more, more_crc, more_calls)
		SELECT 't', 'o' || n, 2, 'm', '', 'tr', 'sp', 'model.response', now(), now(), 1, '[]', 0, ARRAY['new0', 'new1', 'k5']
		FROM generate_series(1, 1000) n`,
		`ANALYZE {{schema}}.events`,
	} {
		if _, err := s.pool.Exec(ctx, s.q(q)); err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
	}
	// The buffers a response's write touches (run_write's own statements
	// included), on the big run and on a run with nothing.
	blocks := func(p *store.RunWriteParams) float64 {
		t.Helper()
		order := make([]int, len(p.Ledger))
		for i := range order {
			order[i] = i
		}
		la, err := ledgerArrays(p.Ledger, order, len(p.Events))
		if err != nil {
			t.Fatal(err)
		}
		c := newCall(p, order, la, s.clock.Now())
		var raw []byte
		if err := s.pool.QueryRow(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+s.q(runWriteCall), c.args()...).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		var out []struct {
			Plan struct {
				Hit  float64 `json:"Shared Hit Blocks"`
				Read float64 `json:"Shared Read Blocks"`
			} `json:"Plan"`
		}
		if err := json.Unmarshal(raw, &out); err != nil || len(out) != 1 {
			t.Fatalf("explain: %v %s", err, raw)
		}
		return out[0].Plan.Hit + out[0].Plan.Read
	}
	// The first writes plan run_write's statements on their connections
	// (catalog reads); the second ones are measured.
	blocks(responseWrite("big", run.Revision, "warm", 10))
	blocks(responseWrite("small", small.Revision, "warm", 10))
	bigBlocks := blocks(responseWrite("big", run.Revision+1, "new", 10))
	smallBlocks := blocks(responseWrite("small", small.Revision+1, "new", 10))
	t.Logf("a response's write touches %.0f buffers on the big run, %.0f on an empty one", bigBlocks, smallBlocks)
	if bigBlocks > smallBlocks+200 {
		t.Errorf("a response's write on a run of 100,000 events touches %.0f buffers, %.0f on an empty run: it reads the run's history",
			bigBlocks, smallBlocks)
	}
	// LedgerGet of a call in the response's row, of a one-record call, of
	// no call: events read by index, a handful of rows.
	for _, call := range []string{"new3", "k5", "m1999_1", "nope"} {
		p := explain(t, s, ledgerGetQuery, "t", "big", call)
		var read float64
		p.walk(func(n *planNode) {
			if n.Relation != "events" {
				return
			}
			if n.NodeType == "Seq Scan" {
				t.Errorf("LedgerGet %s: sequential scan of events\n%s", call, p)
			}
			if n.NodeType == "Index Scan" && n.Index == "events_pkey" || n.NodeType == "Index Scan Backward" && n.Index == "events_pkey" {
				t.Errorf("LedgerGet %s: walks the run's events by its primary key\n%s", call, p)
			}
			read += (n.ActualRows + n.RemovedFilter + n.RemovedRecheck) * max(n.ActualLoops, 1)
		})
		if read > 4 {
			t.Errorf("LedgerGet %s: read %.0f events rows, want the call's own\n%s", call, read, p)
		}
		text := p.String()
		if !strings.Contains(text, "events_by_call") || !strings.Contains(text, "events_more_calls") {
			t.Errorf("LedgerGet %s: not through events_by_call and events_more_calls\n%s", call, p)
		}
	}
	if e, err := s.LedgerGet(ctx, &store.LedgerGetParams{Tenant: "t", RunID: "big", CallID: "new3"}); err != nil || e.Revision != 1 || e.Index != 3 {
		t.Fatalf("LedgerGet new3: %+v, %v", e, err)
	}
}
