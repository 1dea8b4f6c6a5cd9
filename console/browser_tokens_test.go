package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/console"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store/storemem"
)

const (
	aliceBrowserToken = "alice-browser-token-0123456789"
	bobBrowserToken   = "bob-browser-token-0123456789ab"
)

// With a token per person (actoviq console --tokens-file), the sign-in
// page asks for no name: in chromium, alice signs in with her token from a
// login URL, the page names her, she approves a payment on its run page,
// and the decision, the audit trail and the store say alice.
func TestBrowserSignInWithABoundToken(t *testing.T) {
	f := newBrowserFixtureWith(t, nil, func(c *console.Config) {
		c.Tokens = []console.Token{{Secret: aliceBrowserToken, Operator: "alice"}, {Secret: bobBrowserToken, Operator: "bob"}}
	})
	bank := &fileBank{path: filepath.Join(t.TempDir(), "bank.txt")}
	agent := browserAgent("payer", bank, true)
	f.agents["payer"] = agent
	if res, err := f.rt.Run(context.Background(), agent, &actoviq.Input{RunID: "inv-70", Items: []item.Item{item.UserText("pay invoice INV-70")}}); err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("run: %v %+v", err, res)
	}

	f.run(chromedp.Navigate(f.srv.URL+"/login#token="+aliceBrowserToken), chromedp.WaitVisible(chromedp.ID("login-form")))
	f.waitText("#login-how", "recorded under the name your token is bound to")
	names, err := chromedp.Run(f.ctx, chromedp.Evaluate[int](`document.querySelectorAll('#login-form input[name="name"]').length`))
	if err != nil {
		t.Fatal(err)
	}
	if names != 0 {
		t.Fatalf("the sign-in page asks for a name (%d fields) although every token names its person", names)
	}
	// The script moved the token from the URL into the form.
	tok, err := chromedp.Run(f.ctx, chromedp.Evaluate[string](`document.getElementById("token").value`))
	if err != nil || tok != aliceBrowserToken {
		t.Fatalf("token field = %q, %v", tok, err)
	}
	f.shot("login-bound-token.png")
	f.run(chromedp.Submit(chromedp.ID("login-form")))
	f.waitText("#operator", "alice")
	loc, err := chromedp.Run(f.ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(loc, "token") {
		t.Errorf("the token stayed in the URL: %s", loc)
	}

	f.run(chromedp.Navigate(f.srv.URL+"/runs/inv-70"), chromedp.WaitVisible(chromedp.ID("call-call_pay")))
	f.waitText("#call-call_pay .reason", "approval")
	f.run(
		chromedp.Click(chromedp.Search(`//article[@id="call-call_pay"]//summary[normalize-space()="Approve"]`)),
		chromedp.SendKeys(chromedp.CSS(`#call-call_pay form[data-kind="approve"] input[name="note"]`), "INV-70 checked"),
		chromedp.Click(chromedp.CSS(`#call-call_pay form[data-kind="approve"] button[type="submit"]`)),
	)
	f.waitText("#decided", "Recorded approve for call call_pay as alice")
	// Reloaded, the run page's audit trail names the approver.
	f.run(chromedp.Navigate(f.srv.URL+"/runs/inv-70"), chromedp.WaitVisible(chromedp.ID("audit-h")))
	f.waitText(".audit .by", "alice")
	f.shot("run-approved-by-bound-token.png")
	info, err := f.rt.Get(context.Background(), "inv-70")
	if err != nil {
		t.Fatal(err)
	}
	if a := info.Ledger[0].Approval; a == nil || a.By != "alice" || a.Note != "INV-70 checked" {
		t.Fatalf("approval recorded %+v, want by alice", a)
	}
	if n := bank.payments(t); n != 0 {
		t.Fatalf("%d payments before a resume", n)
	}
}

// The sign-in page says what it does in each mode of the tokens: a shared
// token (a name to type), a token per person (no name field), and both
// (the name is for a token bound to none); and a name typed beside a
// bound token is not what decisions are recorded under.
func TestSignInPageFollowsHowTokensAreBound(t *testing.T) {
	const shared = "shared-token-0123456789abcdef"
	for _, c := range []struct {
		name      string
		tokens    []console.Token
		nameField bool
		says      string
	}{
		{"shared token", []console.Token{{Secret: shared}}, true, "Your name is recorded with every decision you make."},
		{"a token per person", []console.Token{{Secret: aliceBrowserToken, Operator: "alice"}, {Secret: bobBrowserToken, Operator: "bob"}},
			false, "there is no name to type"},
		{"both", []console.Token{{Secret: shared}, {Secret: aliceBrowserToken, Operator: "alice"}}, true,
			"With a token bound to no name, type your name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt, err := actoviq.New(storemem.New(nil), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			con, err := console.New(rt, &console.Config{Tokens: c.tokens})
			if err != nil {
				t.Fatal(err)
			}
			defer con.Close()
			srv := httptest.NewServer(con)
			defer srv.Close()
			res, err := http.Get(srv.URL + "/login")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			page := string(body)
			if got := strings.Contains(page, `name="name"`); got != c.nameField || !strings.Contains(page, c.says) {
				t.Fatalf("name field %v (want %v), says %q: %v\n%s", got, c.nameField, c.says, strings.Contains(page, c.says), page)
			}
			// Sign in with a bound token (when there is one), typing
			// someone else's name: the session is the token's person.
			tok, want := shared, "mallory"
			if c.name != "shared token" {
				tok, want = aliceBrowserToken, "alice"
			}
			client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			res, err = client.PostForm(srv.URL+"/login", url.Values{"token": {tok}, "name": {"mallory"}, "next": {"/"}})
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusSeeOther || len(res.Cookies()) == 0 {
				t.Fatalf("sign-in: %d, cookies %v", res.StatusCode, res.Cookies())
			}
			req, _ := http.NewRequest("GET", srv.URL+"/", nil)
			req.AddCookie(res.Cookies()[0])
			res, err = http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ = io.ReadAll(res.Body)
			res.Body.Close()
			if !strings.Contains(string(body), `<b id="operator">`+want+`</b>`) {
				t.Fatalf("signed in with %s typing mallory: page does not name %s\n%s", c.name, want, body)
			}
		})
	}
}
