package storemem_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		Name: "memory",
		// One map set per database; every "handle" shares it, as separate
		// connections to one database would.
		NewDatabase: func(t *testing.T) func(*testing.T, store.Clock) store.Store {
			var s *storemem.Store
			return func(t *testing.T, clock store.Clock) store.Store {
				if s == nil {
					s = storemem.New(&storemem.Config{Clock: clock})
				}
				return s
			}
		},
		Corrupt: func(t *testing.T, s store.Store, what, tenant, id, callID string) {
			if !s.(*storemem.Store).Corrupt(what, tenant, id, callID) {
				t.Fatalf("nothing to corrupt: %s %s %s", what, id, callID)
			}
		},
	})
}
