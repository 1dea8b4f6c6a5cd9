package storepg_test

import (
	"testing"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storetest"
)

// pgBackend opens every handle as its own pool on one schema per test, so
// the suite's races run between pools as they would between processes.
func pgBackend() storetest.Backend {
	return storetest.Backend{
		Name: "postgres",
		NewDatabase: func(t *testing.T) func(t *testing.T, clock store.Clock) store.Store {
			schema := newSchema(t)
			return func(t *testing.T, clock store.Clock) store.Store { return openStore(t, schema, clock) }
		},
		Corrupt: corrupt,
	}
}

func TestConformance(t *testing.T) {
	testURL(t)
	storetest.Run(t, pgBackend())
}
