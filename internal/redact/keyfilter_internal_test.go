package redact

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// keyFragments build strings with keys that are secret, that are not,
// that only become secret across a separator, and the two non-ASCII
// letters the assignment pattern matches case-insensitively.
var keyFragments = []string{
	"api_key", "apiKey", "API-KEY", "password", "paſſword", "pasſ", "tocKen", "TOKEN", "my_token", "tokens_used",
	"pin", "card.pin", "PinCode", "otp", "cvv2", "cookie", "sessionid", "seed_phrase", "sec", "ret", "pass", "word",
	"x", "sha256", "2026-12-02T14", "q05", "c1", "K", "ſ", "é", "İ", "_", ".", "-", "=", ":", " ", "\t", "\"", "'",
	"Bearer ", "basic ", "sk-1", "[REDACTED]", "\\", ",", ";", "@", "--password ", "/", "{", "}",
}

// The filter that skips the assignment pattern never changes what Text
// returns: for random strings made of keyFragments, Text with it and Text
// looking for assignments always are the same, with and without extra keys.
func TestSecretKeyFilterChangesNothing(t *testing.T) {
	rs := []*Redactor{nil, New(), New("wordx", "ſecretive", "K9")}
	rng := rand.New(rand.NewPCG(1, 2))
	n := 50_000
	if testing.Short() {
		n = 10_000
	}
	skipped := 0
	for i := range n {
		var b strings.Builder
		for range 1 + rng.IntN(8) {
			b.WriteString(keyFragments[rng.IntN(len(keyFragments))])
		}
		s := b.String()
		r := rs[i%len(rs)]
		got, want := r.text(s, false), r.text(s, true)
		if got != want {
			t.Fatalf("Redactor %v, %q: with the filter %q, without %q", r, s, got, want)
		}
		if mayHoldSecret(s) && !r.mayHaveSecretKey(s) {
			skipped++
		}
	}
	if skipped < n/20 {
		t.Fatalf("the filter skipped the pattern for %d of %d strings: the comparison tested little", skipped, n)
	}
}

func FuzzSecretKeyFilter(f *testing.F) {
	f.Add("paſſword=hunter2")
	f.Add("agent_digest: sha256:abc")
	f.Add(`{"tocKen": "x"}`)
	r := New("extra")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := r.text(s, false), r.text(s, true); got != want {
			t.Fatalf("%q: with the filter %q, without %q", s, got, want)
		}
	})
}
