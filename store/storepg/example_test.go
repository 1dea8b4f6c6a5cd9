package storepg_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storepg"
)

// This example needs a PostgreSQL server (ACTOVIQ_TEST_PG_URL), so it has
// no Output comment: go test compiles it but does not run it.
func Example() {
	ctx := context.Background()
	s, err := storepg.Open(ctx, os.Getenv("ACTOVIQ_TEST_PG_URL"), &storepg.Config{Schema: "actoviq_example"})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	run, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{
		Tenant: "acme", ID: "run-1", AgentID: "billing", Status: store.RunQueued,
	}})
	if err != nil {
		log.Fatal(err)
	}
	// A worker takes the oldest queued run and a claim on it.
	run, claim, err := s.RunClaimNext(ctx, &store.RunClaimNextParams{Tenant: "acme", Holder: "worker-1", TTL: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	// Record the intent to call a side-effect tool before calling it. The
	// fence makes the write fail if another worker has taken the run over.
	res, err := s.RunWrite(ctx, &store.RunWriteParams{
		Tenant: "acme", RunID: run.ID,
		Fence: &store.Fence{Key: claim.Key, Holder: claim.Holder, Epoch: claim.Epoch},
		Ledger: []store.LedgerWrite{{Entry: &store.LedgerEntry{
			Tenant: "acme", RunID: run.ID, CallID: "call-1", Tool: "charge", Effect: "side-effect",
			State: store.LedgerStarted, IdempotencyKey: "acme/run-1/call-1", Attempt: 1,
			Args: json.RawMessage(`{"cents":500}`),
		}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Ledger[0].State, res.Ledger[0].Revision)
}
