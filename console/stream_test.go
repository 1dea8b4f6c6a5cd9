package console_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/actoviq/actoviq-go/console"
)

// TestInboxStreamIdleCostsAStamp: while nothing that waits changes, the
// live inbox does not recompute its page (one stamp query per tick); a
// decision moves the stamp and the stream sends the new inbox.
func TestInboxStreamIdleCostsAStamp(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.interrupted(f.rt, "run-1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/api/v1/inbox/stream", nil)
	req.Header.Set("Authorization", "Bearer "+tokenAnon)
	res, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	// until reads the stream up to a line with the prefix.
	until := func(prefix string) string {
		t.Helper()
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), prefix) {
				return sc.Text()
			}
		}
		t.Fatalf("stream ended before %q: %v", prefix, sc.Err())
		return ""
	}
	if first := until("data: "); !strings.Contains(first, "run-1") {
		t.Fatalf("first event: %s", first)
	}
	// The keep-alive comes after 15 ticks in which the stamp did not move.
	until(": still here")
	if n := console.InboxComputed(f.con); n != 1 {
		t.Fatalf("the idle stream computed %d pages, want 1 (the first)", n)
	}
	if r := f.call("POST", "/api/v1/runs/run-1/decisions", tokenAlice, `{"call_id":"call_1","kind":"reject","reason":"no"}`); r.status != 200 {
		t.Fatal(r.status, string(r.body))
	}
	for i := 0; ; i++ {
		if ev := until("data: "); strings.Contains(ev, `"kind":"resume"`) {
			break
		}
		if i == 5 {
			t.Fatal("the decision did not reach the stream")
		}
	}
	if n := console.InboxComputed(f.con); n < 2 {
		t.Fatalf("after the decision the stream computed %d pages", n)
	}
}
