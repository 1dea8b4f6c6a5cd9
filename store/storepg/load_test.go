package storepg_test

import (
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store/storetest"
)

// TestLoad: 32 writers × 1,000 CAS updates on 4 runs, through 4 pools (as
// 4 processes would). Run with -v for the throughput.
func TestLoad(t *testing.T) {
	testURL(t)
	if testing.Short() {
		t.Skip("-short: the load test makes 32,000 commits")
	}
	storetest.Load(t, pgBackend(), storetest.LoadOptions{MaxTime: time.Minute})
}
