package actoviq

import (
	"encoding/hex"
	"testing"
)

// TestRandomIDs: ids from the read-ahead entropy are 32 hex digits and
// distinct, across many refills of the buffer.
func TestRandomIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 10 * len(entropy.buf) / 16 {
		id := randomID()
		if b, err := hex.DecodeString(id); err != nil || len(b) != 16 {
			t.Fatalf("id %q: %v", id, err)
		}
		if seen[id] {
			t.Fatalf("id %s twice", id)
		}
		seen[id] = true
	}
}
