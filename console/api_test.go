package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/console"
)

func TestAPIAuth(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.interrupted(f.rt, "run-1")
	for _, path := range []string{"/api/v1/runs", "/api/v1/runs/run-1", "/api/v1/inbox"} {
		if r := f.call("GET", path, "", ""); r.status != http.StatusUnauthorized || r.errCode(t) != "unauthorized" {
			t.Errorf("GET %s without a token: %d %s", path, r.status, r.body)
		}
	}
	if r := f.call("POST", "/api/v1/runs/run-1/decisions", "", `{"call_id":"call_1","kind":"approve"}`); r.status != http.StatusUnauthorized {
		t.Errorf("decision without a token: %d %s", r.status, r.body)
	}
	if r := f.call("POST", "/api/v1/runs/run-1/resume", "", ""); r.status != http.StatusUnauthorized {
		t.Errorf("resume without a token: %d %s", r.status, r.body)
	}
	if r := f.call("GET", "/api/v1/runs", "", "", "Authorization", "Basic "+tokenAnon); r.status != http.StatusUnauthorized {
		t.Errorf("Basic auth: %d", r.status)
	}
	if r := f.call("GET", "/api/v1/runs", tokenAnon, ""); r.status != http.StatusOK {
		t.Fatalf("good token: %d %s", r.status, r.body)
	}
	if r := f.call("GET", "/api/v1/nope", tokenAnon, ""); r.status != http.StatusNotFound || r.errCode(t) != "not_found" {
		t.Errorf("unknown endpoint: %d %s", r.status, r.body)
	}
	// Bad tokens are counted per address: past five, a bad one is answered
	// 429 with Retry-After; the good token is never refused (see
	// TestValidTokenNeverLockedOut for the whole story).
	for i := 0; i < 5; i++ {
		if r := f.call("GET", "/api/v1/runs", tokenAnon+"x", ""); r.status != http.StatusUnauthorized {
			t.Fatalf("bad token %d: %d", i, r.status)
		}
	}
	r := f.call("GET", "/api/v1/runs", tokenAnon+"x", "")
	if r.status != http.StatusTooManyRequests || r.errCode(t) != "too_many_failures" || r.header.Get("Retry-After") == "" {
		t.Fatalf("a sixth bad token: %d %s (Retry-After %q)", r.status, r.body, r.header.Get("Retry-After"))
	}
	if r := f.call("GET", "/api/v1/runs", tokenAnon, ""); r.status != http.StatusOK {
		t.Errorf("the good token after 6 failures: %d %s", r.status, r.body)
	}
	f.clock.Add(61 * time.Second)
	if r := f.call("GET", "/api/v1/runs", tokenAnon+"x", ""); r.status != http.StatusUnauthorized {
		t.Errorf("a bad token after the window: %d %s", r.status, r.body)
	}
}

func TestLoginSessionAndCSRF(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.interrupted(f.rt, "run-1")

	if _, r := f.login("bob", "wrong-token-0123456789"); r.status != http.StatusUnauthorized || !strings.Contains(string(r.body), "not valid") {
		t.Errorf("bad token login: %d", r.status)
	}
	if _, r := f.login("", tokenAnon); r.status != http.StatusBadRequest {
		t.Errorf("login without a name: %d", r.status)
	}
	if _, r := f.login("Console", tokenAnon); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "not a person") {
		t.Errorf(`login as "Console": %d`, r.status)
	}
	b, r := f.login("bob", tokenAnon)
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/" {
		t.Fatalf("login: %d %v", r.status, r.header)
	}
	ck := r.header.Get("Set-Cookie")
	for _, want := range []string{"Secure", "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(ck, want) {
			t.Errorf("session cookie %q lacks %s", ck, want)
		}
	}
	if r := f.callWith(b.c, "GET", "/api/v1/runs/run-1", "", ""); r.status != http.StatusOK {
		t.Fatalf("GET with the session: %d %s", r.status, r.body)
	}
	body := `{"call_id":"call_1","kind":"approve","note":"ok"}`
	if r := f.callWith(b.c, "POST", "/api/v1/runs/run-1/decisions", "", body); r.status != http.StatusForbidden || r.errCode(t) != "csrf" {
		t.Errorf("decision without CSRF: %d %s", r.status, r.body)
	}
	if r := f.callWith(b.c, "POST", "/api/v1/runs/run-1/decisions", "", body, "X-CSRF-Token", strings.Repeat("0", len(b.csrf))); r.status != http.StatusForbidden {
		t.Errorf("decision with a wrong CSRF token: %d %s", r.status, r.body)
	}
	if r := f.callWith(b.c, "POST", "/api/v1/runs/run-1/resume", "", "", "X-CSRF-Token", "nope"); r.status != http.StatusForbidden {
		t.Errorf("resume with a wrong CSRF token: %d %s", r.status, r.body)
	}
	// From another site, even the right CSRF token does not do.
	if r := f.callWith(b.c, "POST", "/api/v1/runs/run-1/decisions", "", body, "X-CSRF-Token", b.csrf, "Origin", "https://evil.example"); r.status != http.StatusForbidden || r.errCode(t) != "csrf" {
		t.Errorf("cross-origin decision: %d %s", r.status, r.body)
	}
	if r := f.callWith(b.c, "POST", "/api/v1/runs/run-1/decisions", "", body, "X-CSRF-Token", b.csrf, "Sec-Fetch-Site", "cross-site"); r.status != http.StatusForbidden {
		t.Errorf("cross-site decision: %d %s", r.status, r.body)
	}
	req, _ := http.NewRequest("POST", f.srv.URL+"/login", strings.NewReader("token="+tokenAnon+"&name=eve"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	if res, err := f.srv.Client().Do(req); err != nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin login: %v %v", err, res)
	} else {
		res.Body.Close()
	}
	info, _ := f.rt.Get(context.Background(), "run-1")
	if info.Ledger[0].Approval != nil {
		t.Fatalf("a refused request recorded %+v", info.Ledger[0].Approval)
	}
	r = f.callWith(b.c, "POST", "/api/v1/runs/run-1/decisions", "", body, "X-CSRF-Token", b.csrf)
	if r.status != http.StatusOK {
		t.Fatalf("decision with CSRF: %d %s", r.status, r.body)
	}
	var dr console.DecisionsResponse
	r.json(t, &dr)
	if dr.By != "bob" || !strings.Contains(dr.Next, "resume") {
		t.Errorf("response %+v", dr)
	}
	info, _ = f.rt.Get(context.Background(), "run-1")
	if a := info.Ledger[0].Approval; a == nil || a.By != "bob" || a.Note != "ok" {
		t.Fatalf("approval recorded as %+v, want by bob", a)
	}
	// A session cannot claim another name.
	f.interrupted(f.rt, "run-2")
	r = f.callWith(b.c, "POST", "/api/v1/runs/run-2/decisions", "", `{"call_id":"call_1","kind":"approve","by":"mallory"}`, "X-CSRF-Token", b.csrf)
	if r.status != http.StatusForbidden || r.errCode(t) != "operator_mismatch" {
		t.Errorf("by another name: %d %s", r.status, r.body)
	}
	// Logout needs the CSRF token, then ends the session.
	if r := f.callWith(b.c, "POST", "/logout", "", ""); r.status != http.StatusForbidden {
		t.Errorf("logout without CSRF: %d", r.status)
	}
	req, _ = http.NewRequest("POST", f.srv.URL+"/logout", strings.NewReader("csrf="+b.csrf))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := b.c.Do(req)
	if err != nil || res.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %v %v", err, res)
	}
	res.Body.Close()
	if r := f.callWith(b.c, "GET", "/api/v1/runs", "", ""); r.status != http.StatusUnauthorized {
		t.Errorf("after logout: %d", r.status)
	}
	// Sessions expire.
	b2, _ := f.login("carol", tokenAnon)
	f.clock.Add(13 * time.Hour)
	if r := f.callWith(b2.c, "GET", "/api/v1/runs", "", ""); r.status != http.StatusUnauthorized {
		t.Errorf("after the session's TTL: %d", r.status)
	}
}

func TestTokenBoundOperator(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	for _, id := range []string{"run-1", "run-2", "run-3"} {
		f.interrupted(f.rt, id)
	}
	approve := func(by string) string {
		s := `{"call_id":"call_1","kind":"approve"`
		if by != "" {
			s += `,"by":"` + by + `"`
		}
		return s + "}"
	}
	if r := f.call("POST", "/api/v1/runs/run-1/decisions", tokenAnon, approve("")); r.status != http.StatusBadRequest || r.errCode(t) != "operator_required" {
		t.Errorf("unbound token without by: %d %s", r.status, r.body)
	}
	if r := f.call("POST", "/api/v1/runs/run-1/decisions", tokenAnon, approve("console")); r.status != http.StatusBadRequest {
		t.Errorf(`by "console": %d %s`, r.status, r.body)
	}
	if r := f.call("POST", "/api/v1/runs/run-1/decisions", tokenAnon, approve("bob")); r.status != http.StatusOK {
		t.Errorf("unbound token with by: %d %s", r.status, r.body)
	}
	if r := f.call("POST", "/api/v1/runs/run-2/decisions", tokenAlice, approve("mallory")); r.status != http.StatusForbidden || r.errCode(t) != "operator_mismatch" {
		t.Errorf("bound token with another by: %d %s", r.status, r.body)
	}
	if r := f.call("POST", "/api/v1/runs/run-2/decisions", tokenAlice, approve("")); r.status != http.StatusOK {
		t.Errorf("bound token: %d %s", r.status, r.body)
	}
	// At login, a bound token's name wins over the typed one.
	b, _ := f.login("someone-else", tokenAlice)
	if r := f.callWith(b.c, "POST", "/api/v1/runs/run-3/decisions", "", approve(""), "X-CSRF-Token", b.csrf); r.status != http.StatusOK {
		t.Errorf("session of a bound token: %d %s", r.status, r.body)
	}
	ctx := context.Background()
	for id, want := range map[string]string{"run-1": "bob", "run-2": "alice", "run-3": "alice"} {
		info, _ := f.rt.Get(ctx, id)
		if a := info.Ledger[0].Approval; a == nil || a.By != want {
			t.Errorf("%s approved by %+v, want %s", id, a, want)
		}
	}
}

func TestRunsListAndGet(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.interrupted(f.rt, "run-a")
	f.clock.Add(time.Second)
	f.interrupted(f.rt, "run-b")
	if _, err := f.rt.Resume(context.Background(), f.agent, "run-b", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "call_1", Kind: actoviq.DecideApprove, By: "t"}}}); err != nil {
		t.Fatal(err)
	}
	f.interrupted(f.other, "acme-run")
	f.interruptedWith(f.rt, payAgent(f.bank, `{"to":"bo","amount":7,"api_key":"sk-live-SECRET"}`), "run-secret")

	list := func(q string) []string {
		t.Helper()
		r := f.call("GET", "/api/v1/runs"+q, tokenAnon, "")
		if r.status != http.StatusOK {
			t.Fatalf("runs%s: %d %s", q, r.status, r.body)
		}
		var v struct{ Runs []actoviq.RunInfo }
		r.json(t, &v)
		var ids []string
		for _, s := range v.Runs {
			ids = append(ids, s.ID+":"+string(s.Status))
		}
		return ids
	}
	if got := strings.Join(list(""), " "); got != "run-secret:interrupted run-b:completed run-a:interrupted" {
		t.Errorf("all runs: %s", got)
	}
	if got := strings.Join(list("?status=interrupted"), " "); got != "run-secret:interrupted run-a:interrupted" {
		t.Errorf("interrupted: %s", got)
	}
	if got := strings.Join(list("?q=RUN-B"), " "); got != "run-b:completed" {
		t.Errorf("search run id: %s", got)
	}
	if got := len(list("?q=payer")); got != 3 {
		t.Errorf("search agent: %d runs", got)
	}
	if got := len(list("?q=acme")); got != 0 {
		t.Errorf("another tenant's run is listed: %d", got)
	}
	if r := f.call("GET", "/api/v1/runs?status=bogus", tokenAnon, ""); r.status != http.StatusBadRequest {
		t.Errorf("bad status: %d", r.status)
	}

	r := f.call("GET", "/api/v1/runs/run-a", tokenAnon, "")
	if r.status != http.StatusOK {
		t.Fatalf("get: %d %s", r.status, r.body)
	}
	var run console.Run
	r.json(t, &run)
	if run.Status != "interrupted" || len(run.Interruptions) != 1 || run.Interruptions[0].Kind != actoviq.InterruptApproval {
		t.Fatalf("run: %+v", run)
	}
	if c := run.Ledger[0]; c.IdempotencyKey != "run-a:call_1" || c.State != "awaiting_approval" || c.Effect != "side-effect" || c.Tool != "pay" {
		t.Errorf("ledger: %+v", c)
	}
	if len(run.Events) == 0 || run.Events[0].Type != actoviq.EvRunStarted || !run.Resume.Available {
		t.Errorf("events %d, resume %+v", len(run.Events), run.Resume)
	}
	sec := f.call("GET", "/api/v1/runs/run-secret", tokenAnon, "")
	if sec.status != 200 || strings.Contains(string(sec.body), "sk-live-SECRET") || !strings.Contains(string(sec.body), `"api_key":"[REDACTED]"`) {
		t.Errorf("the run shows the secret, or not as stored: %s", sec.body)
	}

	// Unknown runs and another tenant's run answer alike: 404, no leak.
	unknown := f.call("GET", "/api/v1/runs/no-such-run", tokenAnon, "")
	acme := f.call("GET", "/api/v1/runs/acme-run", tokenAnon, "")
	if unknown.status != http.StatusNotFound || acme.status != http.StatusNotFound || acme.errCode(t) != "not_found" {
		t.Fatalf("unknown %d, other tenant %d %s", unknown.status, acme.status, acme.body)
	}
	if strings.Replace(string(unknown.body), "no-such-run", "acme-run", 1) != string(acme.body) {
		t.Errorf("another tenant's run answers differently from an unknown one:\n%s\n%s", unknown.body, acme.body)
	}
	for _, path := range []string{"/api/v1/runs/acme-run/decisions", "/api/v1/runs/acme-run/resume"} {
		body := `{"call_id":"call_1","kind":"approve"}`
		if strings.HasSuffix(path, "resume") {
			body = ""
		}
		if r := f.call("POST", path, tokenAlice, body); r.status != http.StatusNotFound || strings.Contains(string(r.body), "awaiting") {
			t.Errorf("POST %s: %d %s", path, r.status, r.body)
		}
	}
	if info, _ := f.other.Get(context.Background(), "acme-run"); info.Ledger[0].Approval != nil || info.Status != actoviq.StatusInterrupted {
		t.Errorf("another tenant's run was changed: %+v", info.Ledger[0])
	}
}

func TestDecisionsBadInput(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.interrupted(f.rt, "run-1")
	cases := []struct {
		name, body string
		status     int
		code       string
	}{
		{"not JSON", `{"call_id":`, 400, "bad_json"},
		{"two values", `{"call_id":"call_1","kind":"approve"} {}`, 400, "bad_json"},
		{"unknown field", `{"call_id":"call_1","kind":"approve","approved":true}`, 400, "bad_json"},
		{"wrong type", `{"call_id":1,"kind":"approve"}`, 400, "bad_json"},
		{"empty", `{}`, 400, "bad_request"},
		{"both forms", `{"call_id":"call_1","kind":"approve","decisions":[{"call_id":"call_1","kind":"approve"}]}`, 400, "bad_request"},
		{"unknown kind", `{"call_id":"call_1","kind":"maybe"}`, 400, "bad_request"},
		{"no call id", `{"kind":"approve"}`, 400, "bad_request"},
		{"reject without reason", `{"call_id":"call_1","kind":"reject"}`, 400, "bad_request"},
		{"failed without message", `{"call_id":"call_1","kind":"failed"}`, 400, "bad_request"},
		{"committed without result", `{"call_id":"call_1","kind":"committed"}`, 400, "bad_request"},
		{"result with approve", `{"call_id":"call_1","kind":"approve","result":"x"}`, 400, "bad_request"},
		{"unknown call", `{"call_id":"call_9","kind":"approve"}`, 404, "unknown_call"},
		{"does not fit", `{"call_id":"call_1","kind":"committed","result":"\"paid\""}`, 409, "decision_conflict"},
		{"batch, one does not fit", `{"decisions":[{"call_id":"call_1","kind":"approve"},{"call_id":"call_1","kind":"reject","reason":"x"}]}`, 409, "decision_conflict"},
	}
	for _, c := range cases {
		r := f.call("POST", "/api/v1/runs/run-1/decisions", tokenAlice, c.body)
		if r.status != c.status || r.errCode(t) != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.status, r.body, c.status, c.code)
		}
	}
	if r := f.call("POST", "/api/v1/runs/run-1/decisions", tokenAlice, `{"call_id":"call_1","kind":"approve"}`, "Content-Type", "text/plain"); r.status != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain body: %d", r.status)
	}
	if r := f.call("POST", "/api/v1/runs/nope/decisions", tokenAlice, `{"call_id":"call_1","kind":"approve"}`); r.status != 404 || r.errCode(t) != "not_found" {
		t.Errorf("unknown run: %d %s", r.status, r.body)
	}
	// Nothing of the refused requests was recorded.
	info, _ := f.rt.Get(context.Background(), "run-1")
	if en := info.Ledger[0]; en.Approval != nil || en.State != "awaiting_approval" {
		t.Fatalf("a refused request changed the ledger: %+v", en)
	}
}

func TestConcurrentDecisionConflicts(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.interrupted(f.rt, "run-1")
	bodies := []string{`{"call_id":"call_1","kind":"approve"}`, `{"call_id":"call_1","kind":"reject","reason":"wrong payee"}`}
	var wg sync.WaitGroup
	results := make([]*resp, 2)
	start := make(chan struct{})
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i] = f.call("POST", "/api/v1/runs/run-1/decisions", tokenAlice, bodies[i])
		}()
	}
	close(start)
	wg.Wait()
	ok, conflict := 0, 0
	for _, r := range results {
		switch r.status {
		case http.StatusOK:
			ok++
		case http.StatusConflict:
			conflict++
			if c := r.errCode(t); c != "decision_conflict" && c != "run_held" {
				t.Errorf("409 code %s", c)
			}
		default:
			t.Errorf("unexpected %d %s", r.status, r.body)
		}
	}
	if ok != 1 || conflict != 1 {
		t.Fatalf("%d recorded, %d conflicts; want 1 and 1", ok, conflict)
	}
	// The loser, told to look again, sees the ledger moved on; a repeat
	// is a plain conflict.
	for _, b := range bodies {
		if r := f.call("POST", "/api/v1/runs/run-1/decisions", tokenAlice, b); r.status != http.StatusConflict || r.errCode(t) != "decision_conflict" {
			t.Errorf("repeat: %d %s", r.status, r.body)
		}
	}
}

func TestResume(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.interrupted(f.rt, "run-1")
	if r := f.call("POST", "/api/v1/runs/run-1/decisions", tokenAlice, `{"decisions":[{"call_id":"call_1","kind":"approve","note":"invoice 42"}]}`); r.status != 200 {
		t.Fatalf("approve: %d %s", r.status, r.body)
	}
	if r := f.call("POST", "/api/v1/runs/run-1/resume", tokenAlice, `{"x":1}`); r.status != 400 {
		t.Errorf("resume with a body: %d", r.status)
	}
	r := f.call("POST", "/api/v1/runs/run-1/resume", tokenAlice, "")
	if r.status != http.StatusOK {
		t.Fatalf("resume: %d %s", r.status, r.body)
	}
	var rr console.ResumeResponse
	r.json(t, &rr)
	if rr.Status != "completed" || f.bank.count() != 1 {
		t.Fatalf("resume: %+v, %d payments", rr, f.bank.count())
	}
	if r := f.call("POST", "/api/v1/runs/run-1/resume", tokenAlice, ""); r.status != http.StatusConflict || r.errCode(t) != "run_finished" {
		t.Errorf("resume of a completed run: %d %s", r.status, r.body)
	}
	if r := f.call("POST", "/api/v1/runs/run-1/decisions", tokenAlice, `{"call_id":"call_1","kind":"approve"}`); r.status != http.StatusConflict {
		t.Errorf("decision on a completed run: %d %s", r.status, r.body)
	}
	if r := f.call("POST", "/api/v1/runs/nope/resume", tokenAlice, ""); r.status != 404 {
		t.Errorf("resume unknown: %d", r.status)
	}
	if f.bank.count() != 1 {
		t.Fatalf("%d payments", f.bank.count())
	}
}

func TestResumeElsewhere(t *testing.T) {
	t.Parallel()
	f := setup(t, &setupOpts{noResume: true})
	f.interrupted(f.rt, "run-1")
	r := f.call("POST", "/api/v1/runs/run-1/resume", tokenAlice, "")
	var e console.Error
	r.json(t, &e)
	if r.status != http.StatusNotImplemented || e.Code != "resume_elsewhere" || e.Command != "actoviq resume run-1 --store sqlite:test.db" {
		t.Fatalf("resume without a Resume function: %d %s", r.status, r.body)
	}
	var run console.Run
	f.call("GET", "/api/v1/runs/run-1", tokenAlice, "").json(t, &run)
	if run.Resume.Available || run.Resume.Command != e.Command {
		t.Errorf("run's resume info %+v", run.Resume)
	}
	var dr console.DecisionsResponse
	f.call("POST", "/api/v1/runs/run-1/decisions", tokenAlice, `{"call_id":"call_1","kind":"approve"}`).json(t, &dr)
	if !strings.Contains(dr.Next, e.Command) {
		t.Errorf("next %q does not name the command", dr.Next)
	}
}

func TestResumeCannot(t *testing.T) {
	t.Parallel()
	f := setup(t, &setupOpts{cfg: func(c *console.Config) {
		c.Resume = func(ctx context.Context, id string) (*actoviq.RunResult, error) {
			return nil, errorf("OPENAI_API_KEY is not set here: %w", console.ErrCannotResume)
		}
	}})
	f.interrupted(f.rt, "run-1")
	r := f.call("POST", "/api/v1/runs/run-1/resume", tokenAlice, "")
	var e console.Error
	r.json(t, &e)
	if r.status != http.StatusNotImplemented || e.Code != "resume_elsewhere" || !strings.Contains(e.Message, "OPENAI_API_KEY") || e.Command == "" {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

func TestInboxOrderFiltersAndStream(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.interrupted(f.rt, "run-old")
	f.clock.Add(time.Minute)
	f.interrupted(f.rt, "run-new")
	f.interrupted(f.other, "acme-run")
	f.clock.Add(time.Minute)

	var in console.Inbox
	f.call("GET", "/api/v1/inbox", tokenAnon, "").json(t, &in)
	if len(in.Items) != 2 || in.Items[0].RunID != "run-old" || in.Items[1].RunID != "run-new" {
		t.Fatalf("inbox: %+v", in.Items)
	}
	it := in.Items[0]
	if it.Kind != "approval" || it.Tool != "pay" || it.Effect != "side-effect" || it.AgeSeconds < 115 || it.AgeSeconds > 130 || it.Reason == "" || strings.Contains(it.Reason, "\n") {
		t.Errorf("item: %+v", it)
	}
	for q, n := range map[string]int{"?tool=pay": 2, "?tool=mail": 0, "?kind=reconciliation": 0, "?kind=approval&agent=payer": 2, "?agent=other": 0} {
		var v console.Inbox
		f.call("GET", "/api/v1/inbox"+q, tokenAnon, "").json(t, &v)
		if len(v.Items) != n {
			t.Errorf("inbox%s: %d items, want %d", q, len(v.Items), n)
		}
		// The tool filter narrows the page only, and says so.
		if narrowed := strings.HasPrefix(q, "?tool="); narrowed != (v.Narrowed != "") ||
			narrowed && !strings.Contains(v.Narrowed, "this page only") {
			t.Errorf("inbox%s: narrowed %q", q, v.Narrowed)
		}
	}

	// The stream sends the inbox at once and again when it changes.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/api/v1/inbox/stream", nil)
	req.Header.Set("Authorization", "Bearer "+tokenAnon)
	res, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	next := func() *console.Inbox {
		t.Helper()
		event := ""
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				event = v
			}
			if v, ok := strings.CutPrefix(line, "data: "); ok && event == "inbox" {
				var in console.Inbox
				if err := json.Unmarshal([]byte(v), &in); err != nil {
					t.Fatal(err)
				}
				return &in
			}
		}
		t.Fatalf("stream ended: %v", sc.Err())
		return nil
	}
	if first := next(); len(first.Items) != 2 {
		t.Fatalf("first event: %+v", first.Items)
	}
	if r := f.call("POST", "/api/v1/runs/run-old/decisions", tokenAlice, `{"call_id":"call_1","kind":"reject","reason":"no"}`); r.status != 200 {
		t.Fatal(r.status, string(r.body))
	}
	// While the decision holds the run's claim the run reads running (it
	// leaves the inbox for a moment); the stream ends up at the run
	// waiting to be resumed.
	for i := 0; ; i++ {
		second := next()
		kinds := map[string]string{}
		for _, it := range second.Items {
			kinds[it.RunID] = it.Kind
		}
		if len(second.Items) == 2 && kinds["run-old"] == "resume" && kinds["run-new"] == "approval" {
			break
		}
		if i == 5 {
			t.Fatalf("after the decision: %+v", second.Items)
		}
	}
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
