package storepg

import "context"

// QueueLen is the number of run writes waiting in s's commit queue.
func QueueLen(s *Store) int {
	return s.commits.Len()
}

// Compact merges a run's log rows with seq in (lo, hi] into one.
func Compact(s *Store, tenant, runID string, lo, hi int64) error {
	return s.compact(context.Background(), tenant, runID, lo, hi)
}

// CreateQueueLen is the number of run creations waiting in s's queue.
func CreateQueueLen(s *Store) int {
	return s.creates.Len()
}
