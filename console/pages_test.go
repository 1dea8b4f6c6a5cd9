package console_test

import (
	"net/http"
	"strings"
	"testing"
)

func TestPages(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.interrupted(f.rt, "run-1")
	f.interrupted(f.other, "acme-run")

	anon := *f.srv.Client()
	anon.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	r := f.callWith(&anon, "GET", "/runs/run-1", "", "")
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/login?next=%2Fruns%2Frun-1" {
		t.Fatalf("page without a session: %d %v", r.status, r.header)
	}
	login := f.callWith(&anon, "GET", "/login?next=//evil.example", "", "")
	if login.status != 200 || !strings.Contains(string(login.body), `name="next" value="/"`) {
		t.Errorf("login page keeps an off-site next: %s", login.body)
	}
	if r := f.callWith(&anon, "GET", "/static/console.js", "", ""); r.status != 200 || !strings.Contains(string(r.body), "X-CSRF-Token") {
		t.Errorf("static script: %d", r.status)
	}
	if csp := login.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("CSP %q", csp)
	}

	b, _ := f.login("bob", tokenAnon)
	inbox := f.callWith(b.c, "GET", "/", "", "")
	for _, want := range []string{"run-1", "approval", "<b>pay</b>", "side-effect", "the call needs approval", "signed in as <b id=\"operator\">bob</b>"} {
		if !strings.Contains(string(inbox.body), want) {
			t.Errorf("inbox lacks %q", want)
		}
	}
	if strings.Contains(string(inbox.body), "acme-run") {
		t.Error("inbox shows another tenant's run")
	}
	if r := f.callWith(b.c, "GET", "/?tool=mail", "", ""); !strings.Contains(string(r.body), "Nothing waits for a person") {
		t.Error("filtered inbox is not empty")
	}
	run := f.callWith(b.c, "GET", "/runs/run-1", "", "")
	for _, want := range []string{`data-kind="approve"`, `data-kind="reject"`, "run-1:call_1", "Resume run", "awaiting_approval", "run.started",
		"The call will never run", "when the run is resumed", "pay call_1 (side-effect) → awaiting_approval, attempt 0, key run-1:call_1", "driven by "} {
		if !strings.Contains(string(run.body), want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	if strings.Contains(string(run.body), `data-kind="committed"`) {
		t.Error("run page offers committed for an approval")
	}
	if r := f.callWith(b.c, "GET", "/runs/acme-run", "", ""); r.status != http.StatusNotFound || strings.Contains(string(r.body), "awaiting") {
		t.Errorf("another tenant's run page: %d", r.status)
	}
	runs := f.callWith(b.c, "GET", "/runs?status=interrupted&q=run", "", "")
	if !strings.Contains(string(runs.body), `href="/runs/run-1"`) || strings.Contains(string(runs.body), "acme-run") {
		t.Errorf("runs page: %s", runs.body)
	}
	if r := f.callWith(b.c, "GET", "/runs?status=bogus", "", ""); r.status != http.StatusBadRequest {
		t.Errorf("runs page, bad status: %d", r.status)
	}
}
