package storemem_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
)

// Every write states the revision it read; a stale writer gets a typed
// conflict that carries both revisions, and nothing is overwritten.
func Example() {
	ctx := context.Background()
	s := storemem.New(nil)
	run, _ := s.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: "acme", ID: "r1", Status: store.RunRunning,
		Checkpoint: json.RawMessage(`{"step":1}`)}})

	write := func(rev int64, cp string) error {
		_, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "acme", RunID: "r1",
			Run: &store.RunUpdate{ExpectedRevision: rev, Status: store.RunRunning, Checkpoint: json.RawMessage(cp)}})
		return err
	}
	fmt.Println(write(run.Revision, `{"step":2}`))
	err := write(run.Revision, `{"step":99}`) // a second writer that read revision 1
	var ce *store.ConflictError
	fmt.Println(errors.Is(err, store.ErrConflict), errors.As(err, &ce) && ce.Expected == 1 && ce.Actual == 2)
	got, _ := s.RunGet(ctx, &store.RunGetParams{Tenant: "acme", ID: "r1"})
	fmt.Println(string(got.Checkpoint), got.Revision)
	// Output:
	// <nil>
	// true true
	// {"step":2} 2
}
