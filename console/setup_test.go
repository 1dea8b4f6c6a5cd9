package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/console"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store/storesqlite"
	"github.com/actoviq/actoviq-go/tool"
)

const (
	tokenAnon  = "token-anonymous-0123456789"
	tokenAlice = "token-alice-0123456789abcdef"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// bank records each payment by idempotency key.
type bank struct {
	mu       sync.Mutex
	payments map[string]int
}

func (b *bank) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, v := range b.payments {
		n += v
	}
	return n
}

type payment struct {
	To     string `json:"to"`
	Amount int    `json:"amount"`
	APIKey string `json:"api_key,omitempty"`
}

func payAgent(b *bank, args string) *actoviq.AgentSpec {
	pay := tool.Func(tool.Spec{Name: "pay", Description: "Send money", Effect: tool.SideEffect},
		func(ctx context.Context, p payment) (string, error) {
			b.mu.Lock()
			b.payments[tool.IdempotencyKey(ctx)]++
			b.mu.Unlock()
			return fmt.Sprintf("sent %d to %s", p.Amount, p.To), nil
		})
	model := scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "call_1", Name: "pay", Arguments: json.RawMessage(args)}}},
		scripted.Turn{Text: "Paid."},
	)
	return &actoviq.AgentSpec{ID: "payer", Provider: model, Model: "scripted", Tools: []tool.Tool{pay},
		Approval: actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}}
}

type fixture struct {
	t      *testing.T
	dbPath string
	clock  *clock
	rt     *actoviq.Runtime
	other  *actoviq.Runtime // tenant "acme", same store
	bank   *bank
	agent  *actoviq.AgentSpec
	con    *console.Console
	srv    *httptest.Server
}

type setupOpts struct {
	noResume bool
	cfg      func(*console.Config)
}

func setup(t *testing.T, o *setupOpts) *fixture {
	t.Helper()
	if o == nil {
		o = &setupOpts{}
	}
	dbPath := filepath.Join(t.TempDir(), "actoviq.db")
	st, err := storesqlite.Open(dbPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	// The store stamps records with the wall clock; the console's clock
	// starts there and is moved by hand.
	clk := &clock{t: time.Now()}
	// The runtimes keep the wall clock: liveness compares the store's claim
	// times with the runtime's clock.
	rt, err := actoviq.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := actoviq.New(st, &actoviq.Config{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, dbPath: dbPath, clock: clk, rt: rt, other: other, bank: &bank{payments: map[string]int{}}}
	f.agent = payAgent(f.bank, `{"to":"ada","amount":5}`)
	cfg := &console.Config{
		Tokens:        []console.Token{{Secret: tokenAnon}, {Secret: tokenAlice, Operator: "alice"}},
		Clock:         clk.Now,
		PollInterval:  20 * time.Millisecond,
		ResumeCommand: func(id string) string { return "actoviq resume " + id + " --store sqlite:test.db" },
	}
	if !o.noResume {
		cfg.Resume = func(ctx context.Context, id string) (*actoviq.RunResult, error) {
			return rt.Resume(ctx, f.agent, id, nil)
		}
	}
	if o.cfg != nil {
		o.cfg(cfg)
	}
	f.con, err = console.New(rt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewTLSServer(f.con)
	t.Cleanup(func() {
		f.srv.Close()
		f.con.Close()
		rt.Close()
		other.Close()
	})
	return f
}

// interrupted starts a run of the pay agent that stops for approval.
func (f *fixture) interrupted(rt *actoviq.Runtime, id string) {
	f.t.Helper()
	f.interruptedWith(rt, f.agent, id)
}

func (f *fixture) interruptedWith(rt *actoviq.Runtime, agent *actoviq.AgentSpec, id string) {
	f.t.Helper()
	res, err := rt.Run(context.Background(), agent, &actoviq.Input{RunID: id, Items: []item.Item{item.UserText("pay ada 5")}})
	if err != nil {
		f.t.Fatal(err)
	}
	if res.Status != actoviq.StatusInterrupted {
		f.t.Fatalf("run %s: %s, want interrupted", id, res.Status)
	}
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r *resp) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
}

func (r *resp) errCode(t *testing.T) string {
	t.Helper()
	var e console.Error
	r.json(t, &e)
	if e.Message == "" {
		t.Errorf("error %q has no message", r.body)
	}
	return e.Code
}

// call makes a request; auth is a bearer token ("" for none).
func (f *fixture) call(method, path, auth, body string, hdr ...string) *resp {
	f.t.Helper()
	return f.callWith(f.srv.Client(), method, path, auth, body, hdr...)
}

func (f *fixture) callWith(c *http.Client, method, path, auth, body string, hdr ...string) *resp {
	f.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return &resp{res.StatusCode, res.Header, b}
}

// browser is a cookie-holding client that does not follow redirects.
type browser struct {
	c    *http.Client
	csrf string
}

func (f *fixture) login(name, token string) (*browser, *resp) {
	f.t.Helper()
	jar, _ := cookiejar.New(nil)
	cl := *f.srv.Client()
	c := &cl
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	form := url.Values{"token": {token}, "name": {name}, "next": {"/"}}
	res, err := c.PostForm(f.srv.URL+"/login", form)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	br := &browser{c: c}
	if res.StatusCode == http.StatusSeeOther {
		page := f.callWith(c, "GET", "/", "", "")
		m := regexp.MustCompile(`<meta name="csrf-token" content="([0-9a-f]+)">`).FindSubmatch(page.body)
		if m == nil {
			f.t.Fatalf("inbox page has no CSRF token: %s", page.body)
		}
		br.csrf = string(m[1])
	}
	return br, &resp{res.StatusCode, res.Header, b}
}
