package storetest_test

import (
	"testing"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/store/storetest"
)

// A backend's test runs the whole suite. NewDatabase makes one empty
// database per test; open may be called more than once to get independent
// handles on it.
func ExampleRun() {
	_ = func(t *testing.T) {
		storetest.Run(t, storetest.Backend{
			Name: "memory",
			NewDatabase: func(t *testing.T) func(*testing.T, store.Clock) store.Store {
				s := storemem.New(nil)
				return func(*testing.T, store.Clock) store.Store { return s }
			},
		})
	}
}
