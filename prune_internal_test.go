package actoviq

import (
	"testing"
	"time"
)

// TestNextBatch: a prune's batch size follows the time a batch took
// toward BatchTime, at most doubling, from 1 to the largest batch.
func TestNextBatch(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		n, max     int
		took, goal time.Duration
		want       int
	}{
		{50, 500, 10 * ms, 20 * ms, 100},  // twice as fast as the goal: doubles
		{50, 500, 1 * ms, 20 * ms, 100},   // much faster: still at most doubles
		{400, 500, 1 * ms, 20 * ms, 500},  // never above the largest batch
		{500, 500, 110 * ms, 20 * ms, 90}, // SQLite under load: about what fits in 20 ms
		{10, 500, time.Second, 20 * ms, 1},
		{10, 500, 0, 20 * ms, 20},
	} {
		if got := nextBatch(c.n, c.max, c.took, c.goal, 0); got != c.want {
			t.Errorf("nextBatch(%d, %d, %v, %v) = %d, want %d", c.n, c.max, c.took, c.goal, got, c.want)
		}
	}
}

// TestNextBatchFixedCost: when a batch's commit alone takes longer than
// the goal (30 ms here, and 0.4 ms a run), the batches, driven by the time
// each takes, settle where a batch takes about twice the commit, not at
// one run; with a fast commit they settle at the goal.
func TestNextBatchFixedCost(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		commit           time.Duration
		minSize, maxSize int
	}{
		{30 * ms, 60, 100}, // about 2 x 30 ms: (60 - 30) / 0.4 = 75 runs
		{2 * ms, 35, 55},   // about 20 ms: (20 - 2) / 0.4 = 45 runs
	} {
		batch, fixed := 50, time.Duration(0)
		sizes := []int{}
		for range 40 {
			took := c.commit + time.Duration(batch)*400*time.Microsecond
			if batch <= smallBatch {
				fixed = took
			}
			batch = nextBatch(batch, 500, took, 20*ms, fixed)
			sizes = append(sizes, batch)
		}
		if batch < c.minSize || batch > c.maxSize {
			t.Errorf("commit %v: batches %v, want the last from %d to %d", c.commit, sizes, c.minSize, c.maxSize)
		}
	}
}
