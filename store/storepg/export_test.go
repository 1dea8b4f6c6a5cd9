package storepg

// QueueLen is the number of run writes waiting in s's commit queue.
func QueueLen(s *Store) int {
	s.commits.mu.Lock()
	defer s.commits.mu.Unlock()
	return len(s.commits.queue)
}
