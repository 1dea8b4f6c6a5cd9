package otelsink

// OpenRuns reports how many runs have open spans in the sink.
func (s *Sink) OpenRuns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.runs)
}
