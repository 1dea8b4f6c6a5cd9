package notify_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/notify"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
)

var secret = []byte("0123456789abcdef-test-secret")

// delivery is one request the webhook received, with its verdicts.
type delivery struct {
	item     notify.Item
	id       string
	sigErr   error
	bodyText string
}

// hook is a local webhook: it verifies each request's signature, records
// it, and answers with the next status of its script (200 once the script
// is spent).
type hook struct {
	srv *httptest.Server
	got chan delivery

	mu     sync.Mutex
	script []int
	hits   int
}

func newHook(t *testing.T, script ...int) *hook {
	t.Helper()
	h := &hook{got: make(chan delivery, 100), script: script}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var d delivery
		d.bodyText = string(body)
		d.id = r.Header.Get(notify.DeliveryHeader)
		d.sigErr = notify.Verify(secret, r.Header.Get(notify.SignatureHeader), body, time.Now(), 0)
		if err := json.Unmarshal(body, &d.item); err != nil {
			d.sigErr = errors.Join(d.sigErr, err)
		}
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			d.sigErr = errors.Join(d.sigErr, errors.New("not a JSON POST: "+r.Method))
		}
		h.mu.Lock()
		status := http.StatusOK
		if h.hits < len(h.script) {
			status = h.script[h.hits]
		}
		h.hits++
		h.mu.Unlock()
		h.got <- d
		w.WriteHeader(status)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hook) next(t *testing.T) delivery {
	t.Helper()
	select {
	case d := <-h.got:
		if d.sigErr != nil {
			t.Errorf("delivery %s: %v", d.id, d.sigErr)
		}
		return d
	case <-t.Context().Done():
		t.Fatal("test ended waiting for a delivery")
	}
	return delivery{}
}

// finished is what OnDone reported for one item.
type finished struct {
	item     notify.Item
	attempts int
	err      error
}

// withDone sets cfg.OnDone to report on the returned channel.
func withDone(cfg *notify.Config) <-chan finished {
	ch := make(chan finished, 100)
	cfg.OnDone = func(it notify.Item, attempts int, err error) { ch <- finished{it, attempts, err} }
	return ch
}

func newNotifier(t *testing.T, cfg notify.Config) *notify.Notifier {
	t.Helper()
	if cfg.Secret == nil {
		cfg.Secret = secret
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = time.Millisecond
	}
	n, err := notify.New(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// payAgent calls one side-effect tool, which needs approval.
func payAgent() *actoviq.AgentSpec {
	pay := tool.Func(tool.Spec{Name: "pay", Effect: tool.SideEffect},
		func(ctx context.Context, in struct {
			Amount int `json:"amount"`
		}) (string, error) {
			return "paid", nil
		})
	return &actoviq.AgentSpec{ID: "billing", Model: "m", Tools: []tool.Tool{pay},
		Approval: actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}},
		Provider: scripted.New(
			scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "pay", Arguments: json.RawMessage(`{"amount":5}`)}}},
			scripted.Turn{Text: "done"},
		)}
}

// TestApprovalReachesWebhook: a real run that stops for approval makes
// one signed delivery naming the run, the call, the kind and the console
// link; resuming it without a decision (still interrupted, same question)
// makes none.
func TestApprovalReachesWebhook(t *testing.T) {
	t.Parallel()
	h := newHook(t)
	n := newNotifier(t, notify.Config{URL: h.srv.URL, ConsoleURL: "https://console.example/ops/"})
	rt, err := actoviq.New(storemem.New(nil), &actoviq.Config{Sinks: []actoviq.EventSink{n}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	agent := payAgent()
	res, err := rt.Run(t.Context(), agent, &actoviq.Input{Items: []item.Item{item.UserText("pay")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actoviq.StatusInterrupted {
		t.Fatalf("status %s, want interrupted", res.Status)
	}
	d := h.next(t)
	it := d.item
	if it.Kind != "approval" || it.RunID != res.RunID || it.CallID != "c1" || it.Tool != "pay" || it.Effect != "side-effect" {
		t.Errorf("item %+v", it)
	}
	if it.Link != "https://console.example/ops/runs/"+res.RunID {
		t.Errorf("link %q", it.Link)
	}
	if it.Schema != notify.Schema || it.ID == "" || d.id != it.ID || it.At.IsZero() || it.Reason == "" {
		t.Errorf("envelope: %+v (delivery header %q)", it, d.id)
	}
	if strings.Contains(d.bodyText, "amount") {
		t.Errorf("the body carries arguments: %s", d.bodyText)
	}

	// The same question again: deduplicated.
	res2, err := rt.Resume(t.Context(), agent, res.RunID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res2.Status != actoviq.StatusInterrupted {
		t.Fatalf("resume: %s", res2.Status)
	}
	if st := n.Stats(); st.Deduplicated != 1 || st.Queued != 1 {
		t.Errorf("stats after the same question again: %+v", st)
	}
	// A different item still goes out, and is the next delivery: nothing
	// else was sent in between.
	n.Notify(notify.Item{Kind: notify.KindStalled, RunID: "other", Epoch: 7})
	if d := h.next(t); d.item.Kind != notify.KindStalled || d.item.RunID != "other" {
		t.Errorf("next delivery %+v, want the stalled item", d.item)
	}
}

// TestRetries: 503 and 429 are retried with the same delivery id until a
// 2xx; a final status is not retried.
func TestRetries(t *testing.T) {
	t.Parallel()
	h := newHook(t, http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusOK, http.StatusOK, http.StatusBadRequest)
	cfg := notify.Config{URL: h.srv.URL, Concurrency: 1}
	done := withDone(&cfg)
	n := newNotifier(t, cfg)
	n.Notify(notify.Item{Kind: "reconciliation", RunID: "r1", CallID: "c1", Attempt: 1})
	first, second, third := h.next(t), h.next(t), h.next(t)
	if first.id == "" || first.id != second.id || second.id != third.id {
		t.Errorf("delivery ids %q %q %q: one item, one id", first.id, second.id, third.id)
	}
	n.Notify(notify.Item{Kind: "recovery", RunID: "r2", CallID: "c1"})
	if d := h.next(t); d.item.RunID != "r2" {
		t.Errorf("got %+v", d.item)
	}
	// The 400 is final: the next delivery is the next item, not a retry.
	n.Notify(notify.Item{Kind: "provider", RunID: "r3"})
	if d := h.next(t); d.item.RunID != "r3" {
		t.Errorf("after a final status got %+v, want the next item", d.item)
	}
	var errs []string
	for range 3 {
		f := <-done
		if f.err != nil {
			errs = append(errs, f.item.RunID+": "+f.err.Error())
		}
		if f.item.RunID == "r1" && f.attempts != 3 {
			t.Errorf("r1 done after %d attempts, want 3", f.attempts)
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0], "r3") || !strings.Contains(errs[0], "400") {
		t.Errorf("failures %v: want one, r3's 400", errs)
	}
	st := n.Stats()
	if st.Retries != 2 || st.Failed != 1 || st.Delivered != 2 {
		t.Errorf("stats %+v: want 2 retries, 1 failed (the 400), 2 delivered", st)
	}
}

// TestAttemptsSpent: a webhook that always fails gets MaxAttempts requests.
func TestAttemptsSpent(t *testing.T) {
	t.Parallel()
	h := newHook(t, 500, 500, 500)
	cfg := notify.Config{URL: h.srv.URL, Concurrency: 1, MaxAttempts: 3}
	done := withDone(&cfg)
	n := newNotifier(t, cfg)
	n.Notify(notify.Item{Kind: "reconciliation", RunID: "r1", CallID: "c1"})
	for range 3 {
		h.next(t)
	}
	f := <-done
	if f.attempts != 3 || f.err == nil || !strings.Contains(f.err.Error(), "500") {
		t.Errorf("done: %d attempts, %v", f.attempts, f.err)
	}
	n.Notify(notify.Item{Kind: "reconciliation", RunID: "r2", CallID: "c1"})
	if d := h.next(t); d.item.RunID != "r2" {
		t.Errorf("a fourth attempt for r1: %+v", d.item)
	}
	if st := n.Stats(); st.Failed != 1 || st.Retries != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestDownWebhookDoesNotBlockRuns: the webhook accepts connections and
// never answers while runs go on. If Emit waited for a delivery the runs
// below would never return (the handler is released only after them).
// Items beyond the queue are dropped and counted, not waited for.
func TestDownWebhookDoesNotBlockRuns(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	entered := make(chan struct{}, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	n := newNotifier(t, notify.Config{URL: srv.URL, Concurrency: 1, Queue: 1})
	rt, err := actoviq.New(storemem.New(nil), &actoviq.Config{Sinks: []actoviq.EventSink{n}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	for i := range 5 {
		res, err := rt.Run(t.Context(), payAgent(), &actoviq.Input{Items: []item.Item{item.UserText("pay")}})
		if err != nil || res.Status != actoviq.StatusInterrupted {
			t.Fatalf("run %d: %v %v", i, res, err)
		}
		if i == 0 {
			<-entered // the first delivery is stuck in the webhook
		}
	}
	st := n.Stats()
	if st.Queued+st.Dropped != 5 || st.Dropped < 3 {
		t.Errorf("stats %+v: with one delivery stuck and a queue of 1, at least 3 of 5 items are dropped", st)
	}
	close(release)
}

// TestCloseAbandonsRetryWaits: Close ends a long retry wait at once.
func TestCloseAbandonsRetryWaits(t *testing.T) {
	t.Parallel()
	h := newHook(t, 503)
	n, err := notify.New(&notify.Config{URL: h.srv.URL, Secret: secret, Backoff: time.Hour, MaxBackoff: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	n.Notify(notify.Item{Kind: "approval", RunID: "r1", CallID: "c1"})
	h.next(t) // the 503: the retry now waits an hour
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if n.Notify(notify.Item{Kind: "approval", RunID: "r2"}) {
		t.Error("a closed notifier queued an item")
	}
}

// TestEscalation: an "approval escalated" event is carried as its own kind.
func TestEscalation(t *testing.T) {
	t.Parallel()
	h := newHook(t)
	n := newNotifier(t, notify.Config{URL: h.srv.URL})
	esc := func(since string) actoviq.Event {
		return actoviq.Event{Type: "tool.approval_escalated", RunID: "r1", Time: time.Now(),
			Data: json.RawMessage(`{"run_id":"r1","call_id":"c1","tool":"pay","effect":"side-effect","waiting_since":"` + since +
				`","decide_by":"2026-12-01T13:00:00Z","escalate_to":["group:finance","bob"]}`)}
	}
	n.Emit(t.Context(), esc("2026-12-01T12:00:00Z"))
	d := h.next(t)
	if d.item.Kind != notify.KindEscalated || d.item.CallID != "c1" || d.item.Tool != "pay" || d.item.Effect != "side-effect" ||
		!strings.Contains(d.item.Reason, "group:finance, bob") || !strings.Contains(d.item.Reason, "2026-12-01T12:00:00Z") {
		t.Errorf("item %+v", d.item)
	}
	// The same wait again: deduplicated; a new wait: a new item.
	n.Emit(t.Context(), esc("2026-12-01T12:00:00Z"))
	n.Emit(t.Context(), esc("2026-12-03T09:00:00Z"))
	if d := h.next(t); !strings.Contains(d.item.Reason, "2026-12-03T09:00:00Z") {
		t.Errorf("second delivery %+v, want the new wait", d.item)
	}
	if st := n.Stats(); st.Deduplicated != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestWatch(t *testing.T) {
	t.Parallel()
	h := newHook(t)
	n := newNotifier(t, notify.Config{URL: h.srv.URL, Concurrency: 1})
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	done := make(chan error, 1)
	go func() {
		done <- n.Watch(ctx, time.Millisecond, func(context.Context) ([]notify.Item, error) {
			calls++
			if calls == 3 {
				return []notify.Item{{Kind: notify.KindStalled, RunID: "r1", Epoch: 3}, {Kind: notify.KindStalled, RunID: "r2", Epoch: 1}}, nil
			}
			return []notify.Item{{Kind: notify.KindStalled, RunID: "r1", Epoch: 3}}, nil
		})
	}()
	a, b := h.next(t), h.next(t)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if a.item.RunID != "r1" || b.item.RunID != "r2" {
		t.Errorf("deliveries %+v %+v", a.item, b.item)
	}
	if st := n.Stats(); st.Queued != 2 {
		t.Errorf("stats %+v: r1 is one item however often it is listed", st)
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"kind":"approval"}`)
	h := notify.Sign(secret, now, body)
	if err := notify.Verify(secret, h, body, now.Add(time.Minute), 0); err != nil {
		t.Fatalf("good signature refused: %v", err)
	}
	for name, c := range map[string]struct {
		secret []byte
		header string
		body   []byte
		now    time.Time
	}{
		"wrong secret":  {[]byte("another-secret-of-16"), h, body, now},
		"changed body":  {secret, h, []byte(`{"kind":"approvaL"}`), now},
		"replayed late": {secret, h, body, now.Add(10 * time.Minute)},
		"no header":     {secret, "", body, now},
		"bad timestamp": {secret, "t=x,v1=00", body, now},
	} {
		if err := notify.Verify(c.secret, c.header, c.body, c.now, 0); !errors.Is(err, notify.ErrSignature) {
			t.Errorf("%s: %v, want ErrSignature", name, err)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg  *notify.Config
		want string
	}{
		{nil, "nil Config"},
		{&notify.Config{Secret: secret}, "URL is empty"},
		{&notify.Config{URL: "ftp://x", Secret: secret}, "not an http(s) URL"},
		{&notify.Config{URL: "http://x", Secret: []byte("short")}, "Secret has 5 bytes"},
		{&notify.Config{URL: "http://x", Secret: secret, ConsoleURL: "/rel"}, "ConsoleURL"},
		{&notify.Config{URL: "http://x", Secret: secret, Queue: -1}, "Queue is negative"},
	} {
		_, err := notify.New(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}
