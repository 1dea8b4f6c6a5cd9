package ledger_test

import (
	"errors"
	"fmt"

	"github.com/actoviq/actoviq-go/internal/ledger"
	"github.com/actoviq/actoviq-go/store"
)

// A side-effect call whose worker died while the tool ran is found in
// started. The runtime does not run it again, whatever its recovery policy;
// an operator's re-execute decision is the only way to a new attempt.
func Example() {
	s := store.LedgerPrepared
	s, _ = ledger.Next(s, ledger.Start) // durable before the tool is invoked
	// ... the process dies while the tool runs ...

	permissive := ledger.RecoveryPolicy{RerunReads: true, RerunIdempotentWrites: true}
	fmt.Println(ledger.Recover(s, "side-effect", "run-1:call-1", permissive))
	fmt.Println(ledger.Recover(s, "read", "run-1:call-1", permissive))
	fmt.Println(ledger.Recover(s, "idempotent-write", "run-1:call-1", ledger.RecoveryPolicy{}))

	// The operator decides: re-execute (same key, next attempt).
	s, _ = ledger.Next(s, ledger.Reexecute)
	fmt.Println(s, ledger.Recover(s, "side-effect", "run-1:call-1", ledger.RecoveryPolicy{}))

	s, _ = ledger.Next(s, ledger.Start)
	s, _ = ledger.Next(s, ledger.Commit)
	_, err := ledger.Next(s, ledger.Start)
	fmt.Println(s, ledger.Terminal(s), errors.Is(err, ledger.ErrTransition))
	// Output:
	// reconcile
	// rerun
	// recover
	// prepared run
	// committed true true
}
