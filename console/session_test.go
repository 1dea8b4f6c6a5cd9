package console_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
)

// A run continuing a session: the run page and the API say the session
// revision it started from, how many transcript items came from the
// session (the run holds them by reference) and how many earlier ones its
// session window left out, and show them.
func TestRunInSession(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	ctx := context.Background()
	if _, err := f.rt.Store().SessionAppend(ctx, &store.SessionAppendParams{Tenant: f.rt.Tenant(), SessionID: "chat", RunID: "earlier",
		Items: []json.RawMessage{json.RawMessage(`{"type":"text","role":"user","text":"my name is Ada"}`),
			json.RawMessage(`{"type":"text","role":"user","text":"I pay in EUR"}`)}}); err != nil {
		t.Fatal(err)
	}
	res, err := f.rt.Run(ctx, f.agent, &actoviq.Input{RunID: "in-session", SessionID: "chat", Items: []item.Item{item.UserText("pay ada 5")}})
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("%+v %v", res, err)
	}
	var run struct {
		SessionID       string      `json:"session_id"`
		SessionRevision int64       `json:"session_revision"`
		SessionItems    int         `json:"session_items"`
		Transcript      []item.Item `json:"transcript"`
	}
	r := f.call("GET", "/api/v1/runs/in-session", tokenAnon, "")
	r.json(t, &run)
	if run.SessionID != "chat" || run.SessionRevision != 2 || run.SessionItems != 2 || len(run.Transcript) < 3 ||
		run.Transcript[0].Text != "my name is Ada" || run.Transcript[2].Text != "pay ada 5" {
		t.Fatalf("API: %s", r.body)
	}
	b, _ := f.login("bob", tokenAnon)
	page := string(f.callWith(b.c, "GET", "/runs/in-session", "", "").body)
	for _, want := range []string{"<code>chat</code> from revision 2: the transcript's first 2 items</dd>", "my name is Ada", "pay ada 5"} {
		if !strings.Contains(page, want) {
			t.Errorf("run page lacks %q", want)
		}
	}

	// A window of one item leaves the first out, and says so.
	a := *f.agent
	a.SessionWindow = 1
	if res, err := f.rt.Run(ctx, &a, &actoviq.Input{RunID: "windowed", SessionID: "chat", Items: []item.Item{item.UserText("pay ada 6")}}); err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("%+v %v", res, err)
	}
	var windowed struct {
		SessionItems   int   `json:"session_items"`
		SessionOmitted int64 `json:"session_omitted"`
	}
	r = f.call("GET", "/api/v1/runs/windowed", tokenAnon, "")
	r.json(t, &windowed)
	if windowed.SessionItems != 1 || windowed.SessionOmitted != 1 {
		t.Fatalf("API: %s", r.body)
	}
	page = string(f.callWith(b.c, "GET", "/runs/windowed", "", "").body)
	for _, want := range []string{"<code>chat</code> from revision 2: the transcript's first 1 items; the session window left out 1 earlier items", "I pay in EUR", "pay ada 6"} {
		if !strings.Contains(page, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	if strings.Contains(page, "my name is Ada") {
		t.Errorf("the windowed run's page shows the item its window left out")
	}
}
