package storepg

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/actoviq/actoviq-go/store"
)

// runWriteParamTypes is run_write's signature, as the server describes the
// prepared statement (TestRunWriteTakesItsOwnPath checks it).
var runWriteParamTypes = []uint32{
	oidText, oidText, oidTimestamptz, oidText, oidText, oidInt8, oidInt8, oidText, oidText, oidText,
	oidText, oidInt8, oidInt8,
	oidInt4Array, oidTextArray, oidInt8Array, oidInt8Array, oidInt8Array, oidTextArray, oidTextArray, oidTextArray, oidTextArray,
	oidInt8Array, oidTextArray, oidTextArray, oidTextArray, oidTextArray, oidTextArray, oidTextArray, oidTextArray, oidInt8Array,
	oidTimestamptzArr, oidTimestamptzArr, oidInt4Array,
	oidInt4,
	oidTextArray, oidTextArray, oidTextArray, oidTextArray, oidTextArray, oidTimestamptzArr, oidTextArray,
	oidText, oidText, oidInt8, oidTextArray,
}

// rawSamples are run writes of every shape newCall encodes: fenced or not,
// with a run update (and a log append) or not, ledger writes with and
// without events, NULL fields, decisions, plain events, folded records.
func rawSamples() []*store.RunWriteParams {
	t0 := time.Date(2026, 12, 3, 5, 50, 1, 123456789, time.FixedZone("x", 3600))
	entry := func(call string, st store.LedgerState) *store.LedgerEntry {
		e := &store.LedgerEntry{Tenant: "t", RunID: "r", CallID: call, Turn: 3, Index: 1, Tool: "charge", Effect: "side-effect",
			State: st, IdempotencyKey: "r:" + call, ArgsDigest: "sha256:ab", Args: json.RawMessage(`{"cents":500}`)}
		if st != store.LedgerPrepared {
			e.Holder, e.Epoch, e.Attempt, e.StartedAt = "w", 7, 1, t0
		}
		if st == store.LedgerCommitted {
			e.Result, e.CommittedAt = json.RawMessage(`{"ok":"é"}`), t0.Add(time.Second)
		}
		return e
	}
	ev := func(typ string) *store.EventRecord {
		return &store.EventRecord{Type: typ, ID: "id-" + typ, TraceID: "tr", Data: json.RawMessage(`{"k":1}`)}
	}
	fence := &store.Fence{Key: "run:r", Holder: "w", Epoch: 7}
	approved := entry("c3", store.LedgerPrepared)
	approved.Approval = &store.DecisionRecord{Kind: "approved", By: "me", At: t0}
	return []*store.RunWriteParams{
		{Tenant: "t", RunID: "r", Fence: fence, Ledger: []store.LedgerWrite{
			{Entry: entry("c1", store.LedgerCommitted), ExpectedRevision: 2, Event: ev("tool.committed")},
			{Entry: entry("c2", store.LedgerStarted), ExpectedRevision: 1, Event: ev("tool.started")}}},
		{Tenant: "t", RunID: "r", Run: &store.RunUpdate{ExpectedRevision: 4, Status: store.RunRunning, Checkpoint: json.RawMessage(`{"turn":2}`),
			Meta: json.RawMessage(`{"m":true}`), Append: []json.RawMessage{json.RawMessage(`{"role":"user"}`), json.RawMessage(`{"role":"assistant"}`)}},
			Events: []*store.EventRecord{ev("model.response"), {Type: "note", ID: "n", Time: t0}},
			Ledger: []store.LedgerWrite{{Entry: entry("c2", store.LedgerPrepared), Event: ev("tool.prepared")},
				{Entry: entry("c1", store.LedgerPrepared), Event: ev("tool.prepared")}, {Entry: approved}}},
		{Tenant: "t", RunID: "r", Fence: fence, Run: &store.RunUpdate{ExpectedRevision: 1, Status: store.RunInterrupted, WaitKind: "approval"}},
		{Tenant: "t", RunID: "r", Events: []*store.EventRecord{{Type: "x", ID: "y"}}},
	}
}

// The encoder gives each parameter the bytes pgx's own binary encoding
// gives it.
func TestRawParamsMatchPgx(t *testing.T) {
	m := pgtype.NewMap()
	now := time.Date(2026, 12, 3, 5, 51, 0, 987654000, time.UTC)
	for n, p := range rawSamples() {
		if err := store.Check(p); err != nil {
			t.Fatalf("sample %d: %v", n, err)
		}
		order := make([]int, len(p.Ledger))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return strings.Compare(p.Ledger[a].Entry.CallID, p.Ledger[b].Entry.CallID) })
		la, err := ledgerArrays(p.Ledger, order, len(p.Events))
		if err != nil {
			t.Fatal(err)
		}
		c := newCall(p, order, la, now)
		var e paramEnc
		if !c.encodeRaw(&e, runWriteParamTypes, rowTypes{}) {
			t.Fatalf("sample %d: the encoder does not know a parameter", n)
		}
		args := c.args()
		if len(args) != len(e.vals) {
			t.Fatalf("sample %d: %d parameters for pgx, %d encoded", n, len(args), len(e.vals))
		}
		for i, a := range args {
			// A buffer to append to, as pgx's query builder has: an empty
			// value is then empty, not NULL.
			want, err := m.Encode(runWriteParamTypes[i], pgtype.BinaryFormatCode, a, make([]byte, 0, 8))
			if err != nil {
				t.Fatalf("sample %d, $%d: pgx: %v", n, i+1, err)
			}
			if got := e.vals[i]; (got == nil) != (want == nil) || !bytes.Equal(got, want) {
				t.Errorf("sample %d, $%d (%T): %x, pgx %x", n, i+1, a, got, want)
			}
		}
	}
}

// An encoded write allocates nothing once the buffer has grown: neither
// the encoding nor the list of parameters it encodes.
func TestRawParamsAllocations(t *testing.T) {
	p := rawSamples()[0]
	order := []int{0, 1}
	la, err := ledgerArrays(p.Ledger, order, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := newCall(p, order, la, time.Now())
	var e paramEnc
	if n := testing.AllocsPerRun(100, func() { c.encodeRaw(&e, runWriteParamTypes, rowTypes{}) }); n != 0 {
		t.Errorf("%v allocations per encoding", n)
	}
}

// The decoder reads run_write's answer as pgx's scan did.
func TestRawAnswerMatchesPgx(t *testing.T) {
	m := pgtype.NewMap()
	t0 := time.Date(2026, 12, 3, 5, 52, 0, 123456000, time.UTC)
	for _, row := range [][]any{
		{"p", "s", "a", "d", `{"m":1}`, t0, int64(9), t0.Add(-time.Hour), int64(11), []time.Time{t0, t0.Add(time.Microsecond)}, int64(3), int64(2)},
		{"", "", "", "", nil, nil, int64(1), t0, int64(1), []time.Time{}, int64(0), nil},
		{nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil},
	} {
		vals := make([][]byte, len(row))
		for i, v := range row {
			b, err := m.Encode(runWriteAnswer[i], pgtype.BinaryFormatCode, v, make([]byte, 0, 8))
			if err != nil {
				t.Fatal(err)
			}
			vals[i] = b
		}
		var got, want call
		if err := got.decodeRaw(vals); err != nil {
			t.Fatal(err)
		}
		dst := []any{&want.parent, &want.session, &want.agent, &want.digest, &want.metaOut, &want.deadline, &want.revision, &want.created,
			&want.firstSeq, &want.ledgerCreated, &want.logLen, &want.logSeq}
		for i := range vals {
			if err := m.Scan(runWriteAnswer[i], pgtype.BinaryFormatCode, vals[i], dst[i]); err != nil {
				t.Fatal(err)
			}
		}
		if got.parent != want.parent || got.session != want.session || got.agent != want.agent || got.digest != want.digest ||
			got.metaOut != want.metaOut || got.revision != want.revision || got.firstSeq != want.firstSeq || got.logLen != want.logLen ||
			got.logSeq != want.logSeq || !sameTime(got.deadline, want.deadline) || !sameTime(got.created, want.created) ||
			len(got.ledgerCreated) != len(want.ledgerCreated) || (got.ledgerCreated == nil) != (want.ledgerCreated == nil) ||
			(got.parent.Valid && got.parent.String == "") != (want.parent.Valid && want.parent.String == "") {
			t.Fatalf("row %v: decoded %+v, pgx %+v", row, got, want)
		}
		for i := range got.ledgerCreated {
			if !sameTime(got.ledgerCreated[i], want.ledgerCreated[i]) {
				t.Errorf("row %v: ledger created %d: %v, pgx %v", row, i, got.ledgerCreated[i], want.ledgerCreated[i])
			}
		}
	}
}

func sameTime(a, b pgtype.Timestamptz) bool {
	return a.Valid == b.Valid && a.InfinityModifier == b.InfinityModifier && a.Time.Equal(b.Time)
}

// Run writes take their own path on a store that Open made: the server
// describes run_write as the encoder and decoder know it. When this fails
// after a change of run_write's signature, change rawwrite.go with it
// (until then every run write goes pgx's slower way, correctly).
func TestRunWriteTakesItsOwnPath(t *testing.T) {
	url := os.Getenv("ACTOVIQ_TEST_PG_URL")
	if url == "" {
		t.Skip("ACTOVIQ_TEST_PG_URL not set: PostgreSQL tests need a server; scripts/test starts one")
	}
	ctx := context.Background()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	schema := "t_raw_" + hex.EncodeToString(b)
	s, err := Open(ctx, url, &Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_, _ = s.pool.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		s.Close()
	}()
	if !s.raw {
		t.Fatal("a store that Open made does not take the run write's own path")
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if s.rows.entryArr == 0 {
		t.Fatal("a store that Open made has not the row types of run_write (migration 023) as the encoder knows them")
	}
	sd := s.rawStatement(ctx, conn.Conn())
	if sd == nil {
		t.Fatal("run_write's answer is not what decodeRaw reads")
	}
	if !s.rows.params(sd.ParamOIDs) {
		t.Fatalf("the raw path's run_write has parameter types %v, not the run_write of rows", sd.ParamOIDs)
	}
	// The 46-parameter run_write (pgx's path, binaries of before 023).
	old := prepareRaw(ctx, conn.Conn(), s.q(runWriteCall))
	if old == nil {
		t.Fatal("the 46-parameter run_write's answer is not what decodeRaw reads")
	}
	if !slices.Equal(old.ParamOIDs, runWriteParamTypes) {
		t.Fatalf("run_write's parameter types %v, the tests' %v", old.ParamOIDs, runWriteParamTypes)
	}
	// Every sample encodes for the run_write of rows.
	for n, p := range rawSamples() {
		c := sampleCall(t, p)
		var e paramEnc
		if !c.encodeRaw(&e, sd.ParamOIDs, s.rows) {
			t.Fatalf("sample %d: the encoder does not know a parameter of the run_write of rows", n)
		}
	}
}

// sampleCall is the call newCall makes of p.
func sampleCall(t *testing.T, p *store.RunWriteParams) *call {
	t.Helper()
	if err := store.Check(p); err != nil {
		t.Fatal(err)
	}
	order := make([]int, len(p.Ledger))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(p.Ledger[a].Entry.CallID, p.Ledger[b].Entry.CallID) })
	la, err := ledgerArrays(p.Ledger, order, len(p.Events))
	if err != nil {
		t.Fatal(err)
	}
	return newCall(p, order, la, time.Date(2026, 12, 3, 5, 51, 0, 987654000, time.UTC))
}

// The rows encoder allocates nothing either, once the buffer has grown.
func TestRawRowsAllocations(t *testing.T) {
	c := sampleCall(t, rawSamples()[0])
	rt := rowTypes{entry: 90001, entryArr: 90002, event: 90003, eventArr: 90004}
	oids := []uint32{oidText, oidText, oidTimestamptz, oidText, oidText, oidInt8, oidInt8, oidText, oidText, oidText,
		oidText, oidInt8, oidInt8, rt.entryArr, rt.eventArr, oidText, oidText, oidInt8, oidTextArray}
	var e paramEnc
	if !c.encodeRaw(&e, oids, rt) {
		t.Fatal("the encoder does not know a parameter of the run_write of rows")
	}
	if n := testing.AllocsPerRun(100, func() { c.encodeRaw(&e, oids, rt) }); n != 0 {
		t.Errorf("%v allocations per encoding", n)
	}
}
