package cli

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/notify"
)

const opsSecret = "a-webhook-secret-for-the-test"

// freeAddr returns a loopback address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// scrapeUntil scrapes url until ok accepts the samples (the worker
// process may still be starting, or still recording what the test saw
// happen), at most 60 s.
func scrapeUntil(t *testing.T, url string, ok func(map[string]float64) bool) map[string]float64 {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last map[string]float64
	for {
		if resp, err := http.Get(url); err == nil {
			last = map[string]float64{}
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				line := sc.Text()
				if line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				i := strings.LastIndexByte(line, ' ')
				if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
					last[line[:i]] = v
				}
			}
			resp.Body.Close()
			if ok(last) {
				return last
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("scrape of %s never satisfied the test; last samples: %v", url, last)
		}
		time.Sleep(100 * time.Millisecond) // polling another process's endpoint
	}
}

func sample(s map[string]float64, name string, labels ...string) (float64, bool) {
	for k, v := range s {
		n, l, _ := strings.Cut(k, "{")
		if n != name {
			continue
		}
		all := true
		for _, want := range labels {
			all = all && strings.Contains(l, want)
		}
		if all {
			return v, true
		}
	}
	return 0, false
}

// A worker process with --metrics-listen and --notify-url drives a queued
// payment that needs approval: the webhook gets one signed item naming the
// run and call with a console link, and a scrape of the worker's endpoint
// shows the claim, the interrupted run, the inbox item and the delivered
// notification. Every series the alert rules of docs/operations.md use is served.
func TestBinaryWorkerMetricsAndNotify(t *testing.T) {
	x := newE2E(t)
	got := make(chan notify.Item, 10)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := notify.Verify([]byte(opsSecret), r.Header.Get(notify.SignatureHeader), body, time.Now(), 0); err != nil {
			t.Errorf("webhook: %v", err)
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var it notify.Item
		if err := json.Unmarshal(body, &it); err != nil {
			t.Errorf("webhook body %s: %v", body, err)
		}
		got <- it
	}))
	defer hook.Close()

	r := actoviqBin(t, nil, "run", "--detach", "--store", x.store, "--run-id", "m1", "--model", "scripted:"+x.sc,
		"--demo-bank", x.bank, "pay INV-42")
	wantExit(t, r, 0, "run --detach")
	addr := freeAddr(t)
	w := startWorker(t, []string{"ACTOVIQ_NOTIFY_SECRET=" + opsSecret}, "--store", x.store, "--poll", "50ms",
		"--metrics-listen", addr, "--notify-url", hook.URL, "--console-url", "https://console.example/")

	var it notify.Item
	select {
	case it = <-got:
	case <-time.After(60 * time.Second):
		t.Fatalf("no notification\nworker stderr:\n%s", w.stderr)
	}
	if it.Kind != "approval" || it.RunID != "m1" || it.CallID == "" || it.Tool != "pay_invoice" ||
		it.Link != "https://console.example/runs/m1" {
		t.Errorf("notification %+v", it)
	}
	if len(x.payments()) != 0 {
		t.Fatal("paid without approval")
	}

	s := scrapeUntil(t, "http://"+addr+"/metrics", func(s map[string]float64) bool {
		n, _ := sample(s, "actoviq_notifications_total", `outcome="delivered"`)
		return n == 1
	})
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"actoviq_claims_total", []string{`takeover="false"`}, 1},
		{"actoviq_claim_duration_seconds_count", nil, 1},
		{"actoviq_drives_ended_total", []string{`status="interrupted"`}, 1},
		{"actoviq_runs", []string{`status="interrupted"`}, 1},
		{"actoviq_runs", []string{`status="stalled"`}, 0},
	} {
		if v, ok := sample(s, c.name, c.labels...); !ok || v != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, v, ok, c.want)
		}
	}
	var waiting float64
	for k, v := range s {
		if strings.HasPrefix(k, "actoviq_inbox_items{") {
			waiting += v
		}
	}
	if waiting != 1 {
		t.Errorf("inbox items %v, want 1 in all", waiting)
	}

	// The alert rules refer only to series the endpoint serves (a counter
	// with no event yet is served at 0).
	rules, err := os.ReadFile("../../docs/prometheus-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	exprs := regexp.MustCompile(`(?m)^\s*expr: (.*)$`).FindAllStringSubmatch(string(rules), -1)
	if len(exprs) != 3 {
		t.Fatalf("%d alert expressions, want 3", len(exprs))
	}
	for _, e := range exprs {
		for _, name := range regexp.MustCompile(`actoviq_[a-z_]+`).FindAllString(e[1], -1) {
			if !strings.Contains(string(page), "\n"+name+" ") && !strings.Contains(string(page), "\n"+name+"{") {
				t.Errorf("alert %q uses %s, which the endpoint does not serve", e[1], name)
			}
		}
	}
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), string(rules)) {
		t.Error("docs/operations.md does not show docs/prometheus-alerts.yml as it is")
	}
}

// The console with --metrics-listen serves the gauges over the store and
// counts the decisions recorded through it.
func TestConsoleMetrics(t *testing.T) {
	h := newHarness(t)
	h.want(ExitInterrupted, h.runArgs("--run-id", "r1", "pay INV-42")...)
	out, _, _ := startConsole(t, h, "--metrics-listen", "127.0.0.1:0")
	m := out.wait(t, regexp.MustCompile(`metrics on (http://127\.0\.0\.1:\d+/metrics)\n`), nil)
	tok := out.wait(t, regexp.MustCompile(`sign in at (http://127\.0\.0\.1:\d+)/login#token=([0-9a-f]{48})\n`), nil)
	base, token := tok[1], tok[2]
	s := scrapeUntil(t, m[1], func(s map[string]float64) bool { _, ok := sample(s, "actoviq_runs"); return ok })
	if v, ok := sample(s, "actoviq_runs", `status="interrupted"`); !ok || v != 1 {
		t.Errorf("actoviq_runs{interrupted} = %v (present %v), want 1", v, ok)
	}
	if code, v := apiCall(t, "POST", base+"/api/v1/runs/r1/decisions", token, `{"call_id":"call_pay","kind":"approve","by":"alice"}`); code != 200 {
		t.Fatalf("approve: %d %v", code, v)
	}
	s = scrapeUntil(t, m[1], func(s map[string]float64) bool { v, _ := sample(s, "actoviq_approvals_total"); return v > 0 })
	if v, ok := sample(s, "actoviq_approvals_total", `decision="approved"`); !ok || v != 1 {
		t.Errorf("approvals{approved} = %v (present %v), want 1", v, ok)
	}
}
