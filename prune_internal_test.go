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
		if got := nextBatch(c.n, c.max, c.took, c.goal); got != c.want {
			t.Errorf("nextBatch(%d, %d, %v, %v) = %d, want %d", c.n, c.max, c.took, c.goal, got, c.want)
		}
	}
}
