package cli

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const (
	aliceToken = "alice-token-0123456789abcdef"
	bobToken   = "bob-token-0123456789abcdef"
	carolToken = "carol-token-0123456789abcdef"
)

// TestConsoleTokensFileBindsEachPersonToTheirName: with --tokens-file each
// person signs in with their own token and every decision is recorded
// under the name bound to it: a name typed at sign-in or given in "by"
// does not change it, so a two-person rule needs two tokens.
func TestConsoleTokensFileBindsEachPersonToTheirName(t *testing.T) {
	h := newHarness(t)
	pol := filepath.Join(h.dir, "approvals.json")
	if err := os.WriteFile(pol, []byte(`{"version": "p1", "groups": {"finance": ["alice", "bob"]},
	  "rules": [{"name": "payments", "tools": ["pay_invoice"], "approve": ["group:finance"], "reject": ["group:finance"],
	             "settle": ["group:finance"], "approvers": 2},
	            {"name": "rest", "approve": ["*"], "reject": ["*"], "settle": ["*"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	h.envs["ACTOVIQ_APPROVALS"] = pol
	h.want(ExitInterrupted, h.runArgs("--run-id", "r1", "pay INV-42")...)
	tf := filepath.Join(h.dir, "tokens")
	if err := os.WriteFile(tf, []byte("# the finance desk\nalice "+aliceToken+"\n\n  bob\t"+bobToken+"  \ncarol "+carolToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, _ := startConsole(t, h, "--tokens-file", tf)
	base := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)\n`).FindStringSubmatch(out.String())[1]
	if s := out.String(); strings.Contains(s, "-token-") || !strings.Contains(s, "with your own token from "+tf+" (3 named tokens)") {
		t.Fatalf("banner: %s", s)
	}
	if s := stderr.String(); strings.Contains(s, "bound to no name") || strings.Contains(s, "warning") {
		t.Fatalf("named tokens under a policy warned: %q", s)
	}

	// Alice signs in through the page, typing bob's name: she is alice.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	res, err := browser.PostForm(base+"/login", url.Values{"token": {aliceToken}, "name": {"bob"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	res, err = browser.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	page := new(strings.Builder)
	_, _ = copyTo(page, res)
	if m := regexp.MustCompile(`<b id="operator">([^<]*)</b>`).FindStringSubmatch(page.String()); m == nil || m[1] != "alice" {
		t.Fatalf("signed in with alice's token, typing bob: operator %v (status %d)", m, res.StatusCode)
	}
	csrf := regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`).FindStringSubmatch(page.String())
	if csrf == nil {
		t.Fatal("no CSRF token on the page")
	}
	// Her session claims bob in the decision: refused, nothing recorded.
	decide := func(body string) (int, string) {
		req, _ := http.NewRequest("POST", base+"/api/v1/runs/r1/decisions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-CSRF-Token", csrf[1])
		res, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b := new(strings.Builder)
		_, _ = copyTo(b, res)
		return res.StatusCode, b.String()
	}
	if code, body := decide(`{"call_id":"call_pay","kind":"approve","by":"bob"}`); code != 403 || !strings.Contains(body, "operator_mismatch") {
		t.Fatalf("alice's session deciding as bob: %d %s", code, body)
	}
	// Carol's token is not in finance: she cannot approve by claiming alice or on her own.
	if code, v := apiCall(t, "POST", base+"/api/v1/runs/r1/decisions", carolToken, `{"call_id":"call_pay","kind":"approve","by":"alice"}`); code != 403 || v["code"] != "operator_mismatch" {
		t.Fatalf("carol's token as alice: %d %v", code, v)
	}
	if code, v := apiCall(t, "POST", base+"/api/v1/runs/r1/decisions", carolToken, `{"call_id":"call_pay","kind":"approve"}`); code == 200 {
		t.Fatalf("carol (not in finance) approved: %v", v)
	}
	h.want(ExitCompleted, "runs", "show", "r1", "--store", h.store)
	if s := h.stdout.String(); !strings.Contains(s, "approvals: 0 of 2 distinct approvers (approved by nobody yet)") {
		t.Fatalf("a refused decision was recorded:\n%s", s)
	}

	// Alice approves (her session, no name given): recorded as alice.
	if code, body := decide(`{"call_id":"call_pay","kind":"approve","note":"invoice checked"}`); code != 200 || !strings.Contains(body, `"by":"alice"`) {
		t.Fatalf("alice approves: %d %s", code, body)
	}
	// Alice's token again, claiming bob or not, is not the second approver.
	if code, v := apiCall(t, "POST", base+"/api/v1/runs/r1/decisions", aliceToken, `{"call_id":"call_pay","kind":"approve","by":"bob"}`); code != 403 || v["code"] != "operator_mismatch" {
		t.Fatalf("alice's token as bob: %d %v", code, v)
	}
	if code, v := apiCall(t, "POST", base+"/api/v1/runs/r1/decisions", aliceToken, `{"call_id":"call_pay","kind":"approve"}`); code == 200 {
		t.Fatalf("alice approved twice: %v", v)
	}
	h.want(ExitCompleted, "runs", "show", "r1", "--store", h.store)
	if s := h.stdout.String(); !strings.Contains(s, "approvals: 1 of 2 distinct approvers (approved by alice); still needed: 1 more") {
		t.Fatalf("after alice:\n%s", s)
	}
	if code, v := apiCall(t, "POST", base+"/api/v1/runs/r1/resume", aliceToken, ""); code == 200 && v["status"] == "completed" || h.bankLines() != 0 {
		t.Fatalf("resumed with one approver: %d %v, %d payments", code, v, h.bankLines())
	}
	// Bob's own token is the second approver.
	if code, v := apiCall(t, "POST", base+"/api/v1/runs/r1/decisions", bobToken, `{"call_id":"call_pay","kind":"approve"}`); code != 200 || v["by"] != "bob" {
		t.Fatalf("bob approves: %d %v", code, v)
	}
	if code, v := apiCall(t, "POST", base+"/api/v1/runs/r1/resume", bobToken, ""); code != 200 || v["status"] != "completed" {
		t.Fatalf("resume: %d %v", code, v)
	}
	if h.bankLines() != 1 {
		t.Fatalf("%d payments", h.bankLines())
	}
	h.want(ExitCompleted, "audit", "export", "--store", h.store, "--run", "r1")
	rec := h.stdout.String()
	if i, j := strings.Index(rec, `"by":"alice"`), strings.Index(rec, `"by":"bob"`); i < 0 || j < 0 || strings.Contains(rec, `"by":"carol"`) {
		t.Fatalf("audit record: %s", rec)
	}
}

// TestConsoleTokensFileRefusals: a bad tokens file, or one given with a
// shared token or --operator, is a usage error naming the line and never
// echoing a token; a file others can read is used with a warning.
func TestConsoleTokensFileRefusals(t *testing.T) {
	h := newHarness(t)
	h.want(ExitInterrupted, h.runArgs("--run-id", "r1", "pay")...)
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(h.dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "alice "+aliceToken+"\nbob "+bobToken+"\n", 0o600)
	for _, c := range []struct {
		name, body string
		want       string
	}{
		{"short", "alice " + aliceToken + "\nbob shortsecret\n", "line 2: bob's token is shorter than 16 characters"},
		{"duptoken", "alice " + aliceToken + "\n# x\nbob " + aliceToken + "\n", "line 3: bob's token is the same as line 1's"},
		{"dupname", "alice " + aliceToken + "\nAlice " + bobToken + "\n", "line 2: the name Alice is already on line 1"},
		{"onefield", "alice " + aliceToken + "\n" + bobToken + "\n", "line 2: want NAME TOKEN"},
		{"threefields", "alice smith " + aliceToken + "\n", "line 1: want NAME TOKEN"},
		{"console", "console " + aliceToken + "\n", `line 1: "console" is not a person`},
		{"empty", "# nobody yet\n\n", "no NAME TOKEN line"},
	} {
		p := write(c.name, c.body, 0o600)
		code := h.run("console", "--store", h.store, "--listen", "127.0.0.1:0", "--tokens-file", p)
		msg := h.stderr.String()
		if code != ExitUsage || !strings.Contains(msg, "--tokens-file "+p+" "+c.want) && !strings.Contains(msg, "--tokens-file "+p+": "+c.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", c.name, code, msg, c.want)
		}
		if strings.Contains(msg+h.stdout.String(), "-token-") || strings.Contains(msg, "shortsecret") {
			t.Errorf("%s: a token is echoed: %q", c.name, msg)
		}
	}
	if code := h.run("console", "--store", h.store, "--tokens-file", filepath.Join(h.dir, "missing")); code != ExitUsage || !strings.Contains(h.stderr.String(), "--tokens-file") {
		t.Errorf("missing file: exit %d %q", code, h.stderr)
	}
	shared := write("shared", "shared-token-0123456789abcdef\n", 0o600)
	for _, c := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--token-file", shared}, "", "--tokens-file and --token-file go apart"},
		{nil, "env-token-0123456789abcdef", "--tokens-file and $ACTOVIQ_CONSOLE_TOKEN go apart"},
		{[]string{"--operator", "alice"}, "", "--tokens-file and --operator go apart"},
	} {
		h.envs["ACTOVIQ_CONSOLE_TOKEN"] = c.env
		code := h.run(append([]string{"console", "--store", h.store, "--listen", "127.0.0.1:0", "--tokens-file", good}, c.args...)...)
		if code != ExitUsage || !strings.Contains(h.stderr.String(), c.want) {
			t.Errorf("%v env %q: exit %d %q, want 2 and %q", c.args, c.env, code, h.stderr, c.want)
		}
	}
	h.envs["ACTOVIQ_CONSOLE_TOKEN"] = ""

	// A file others can read: used, with a warning naming it and the fix.
	open := write("open", "alice "+aliceToken+"\n", 0o644)
	out, stderr, stop := startConsole(t, h, "--tokens-file", open)
	base := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)\n`).FindStringSubmatch(out.String())[1]
	if code, _ := apiCall(t, "GET", base+"/api/v1/runs/r1", aliceToken, ""); code != 200 {
		t.Fatalf("alice's token: %d", code)
	}
	if code, _ := apiCall(t, "GET", base+"/api/v1/runs/r1", bobToken, ""); code != 401 {
		t.Fatalf("a token not in the file: %d", code)
	}
	stop()
	if s := stderr.String(); !strings.Contains(s, "actoviq: warning: "+open+" can be read by other users") || !strings.Contains(s, "chmod 600") {
		t.Errorf("no warning for a readable tokens file: %q", s)
	}
	_, stderr, stop = startConsole(t, h, "--tokens-file", good)
	stop()
	if strings.Contains(stderr.String(), "warning") {
		t.Errorf("a private tokens file warned: %q", stderr)
	}
}

func copyTo(b *strings.Builder, res *http.Response) (int64, error) {
	defer res.Body.Close()
	n := int64(0)
	buf := make([]byte, 32<<10)
	for {
		k, err := res.Body.Read(buf)
		b.Write(buf[:k])
		n += int64(k)
		if err != nil {
			return n, nil
		}
	}
}
