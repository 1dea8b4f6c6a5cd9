package storepg_test

import (
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store/storetest"
)

// TestLoad: 32 writers × 100 CAS updates (ACTOVIQ_TEST_LOAD_UPDATES: more) on 4 runs, through 4 pools (as
// 4 processes would). Run with -v for the throughput.
func TestLoad(t *testing.T) {
	testURL(t)
	if testing.Short() {
		t.Skip("-short: the load test makes 3,200 commits or more")
	}
	storetest.Load(t, pgBackend(), storetest.LoadOptions{MaxTime: time.Minute})
}
