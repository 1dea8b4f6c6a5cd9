package storesqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

func Example() {
	dir, err := os.MkdirTemp("", "actoviq-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	s, err := storesqlite.Open(filepath.Join(dir, "actoviq.db"), nil)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	ctx := context.Background()

	run, err := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{
		Tenant: "acme", ID: "run-1", AgentID: "support", Status: store.RunRunning,
		Checkpoint: json.RawMessage(`{"turn":0}`)}})
	if err != nil {
		panic(err)
	}
	fmt.Println("created at revision", run.Revision)

	// A write states the revision it read.
	res, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "acme", RunID: "run-1",
		Run: &store.RunUpdate{ExpectedRevision: run.Revision, Status: store.RunRunning,
			Checkpoint: json.RawMessage(`{"turn":1}`)}})
	if err != nil {
		panic(err)
	}
	fmt.Println("written at revision", res.Run.Revision)

	// A second writer that also read revision 1 is refused; nothing is
	// overwritten.
	_, err = s.RunWrite(ctx, &store.RunWriteParams{Tenant: "acme", RunID: "run-1",
		Run: &store.RunUpdate{ExpectedRevision: run.Revision, Status: store.RunFailed}})
	var ce *store.ConflictError
	if errors.As(err, &ce) {
		fmt.Printf("conflict: expected %d, found %d\n", ce.Expected, ce.Actual)
	}
	// Output:
	// created at revision 1
	// written at revision 2
	// conflict: expected 1, found 2
}
