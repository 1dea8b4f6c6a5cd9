package console_test

import (
	"net/http"
	"testing"
)

// TestReview27ValidTokenWhateverTheSchemeCase: the auth scheme is
// case-insensitive (RFC 9110 11.1): "bearer TOKEN", as some clients and
// proxies send it, is the valid token, never a refusal or a failure
// counted against the address.
func TestReview27ValidTokenWhateverTheSchemeCase(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	for _, scheme := range []string{"bearer ", "BEARER ", "Bearer  "} {
		if r := f.call("GET", "/api/v1/runs", "", "", "Authorization", scheme+tokenAnon); r.status != http.StatusOK {
			t.Errorf("%q+token: %d %s", scheme, r.status, r.body)
		}
	}
	if r := f.call("GET", "/api/v1/runs", "", "", "Authorization", "bearer not-the-token"); r.status != http.StatusUnauthorized {
		t.Errorf("a wrong token with a lowercase scheme: %d", r.status)
	}
}
