package storepg_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/actoviq/actoviq-go/store"
)

// A run write whose deadline passes while the server waits (another
// transaction holds the table its records go to) returns at its deadline
// with the context's error, and the store writes on once the table is
// free: the connection the interrupted write left is not reused (its
// deadline is set, its state unknown).
func TestRunWriteDeadlineWhileServerWaits(t *testing.T) {
	b := setup(t)
	s := b.s
	ctx := context.Background()
	for _, id := range []string{"r1", "r2"} {
		if _, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: id, Status: store.RunRunning, Checkpoint: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	write := func(ctx context.Context, id, call string) error {
		_, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: id, Ledger: []store.LedgerWrite{{
			Entry: &store.LedgerEntry{Tenant: "t", RunID: id, CallID: call, Tool: "x", State: store.LedgerPrepared, Args: json.RawMessage(`{}`)},
			Event: &store.EventRecord{Type: "tool.prepared"}}}})
		return err
	}
	if err := write(ctx, "r1", "warm"); err != nil { // the connection has run_write prepared
		t.Fatal(err)
	}
	locker, err := pgx.Connect(ctx, testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(ctx)
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE "+pgx.Identifier{b.schema, "events"}.Sanitize()+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = write(wctx, "r1", "c1")
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("write past its deadline: %v, want an error matching context.DeadlineExceeded", err)
	}
	if took > 5*time.Second {
		t.Errorf("write past its 300ms deadline returned after %v", took)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"r2", "r1", "r2"} {
		if err := write(ctx, id, "after"+string(rune('0'+i))); err != nil {
			t.Fatalf("write %d after the interrupted one: %v", i, err)
		}
	}
}
