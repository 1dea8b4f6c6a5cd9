package storemem

import "encoding/json"

// Corrupt overwrites stored JSON with bytes that do not decode, standing in
// for a damaged row in the durable backends. It exists only in tests.
func (s *Store) Corrupt(what, tenant, id, callID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	bad := json.RawMessage("{not json")
	switch what {
	case "run":
		if r, ok := s.runs[key{tenant, id}]; ok {
			r.Checkpoint = bad
			return true
		}
	case "ledger":
		if e, ok := s.ledger[key{tenant, id}][callID]; ok {
			c := *e // a stored entry is replaced, never changed in place (RunWrite shares it)
			c.Result = bad
			s.ledger[key{tenant, id}][callID] = &c
			return true
		}
	case "session":
		if ss, ok := s.sessions[key{tenant, id}]; ok && len(ss.entries) > 0 {
			ss.entries[len(ss.entries)-1].Item = bad
			return true
		}
	}
	return false
}
