package storetest

import (
	"testing"

	"github.com/actoviq/actoviq-go/store"
)

// Backend describes a store implementation under test.
type Backend struct {
	// Name names the backend in subtest names ("sqlite", "pg", …).
	Name string
	// NewDatabase makes an empty database for one test and returns a
	// function that opens a store on it. Each call of the returned function
	// opens an independent handle (its own connections) to the same data;
	// the backend closes every handle at test cleanup. clock drives claim
	// expiry and timestamps (nil: real time).
	NewDatabase func(t *testing.T) (open func(t *testing.T, clock store.Clock) store.Store)
	// Corrupt damages the stored bytes of one record so that decoding it
	// fails: what is "run", "ledger" or "session"; id is the run id (run,
	// ledger), or the session id; callID names the ledger entry.
	Corrupt func(t *testing.T, s store.Store, what, tenant, id, callID string)
}
