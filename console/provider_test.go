package console_test

import (
	"context"
	"iter"
	"net/http"
	"strings"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/console"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
)

// downModel is a provider whose every call fails as a server outage does
// after the transport's retries.
type downModel struct{}

func (downModel) Name() string                         { return "down" }
func (downModel) Capabilities(string) llm.Capabilities { return llm.Capabilities{} }
func (downModel) err() error {
	return &llm.ProviderError{Provider: "down", Status: 503, Code: "overloaded", Message: "try later", RequestID: "req-503",
		Retryable: true, RetryAfter: 3 * time.Second}
}
func (m downModel) Generate(context.Context, *llm.Request) (*llm.Response, error) {
	return nil, m.err()
}
func (m downModel) Stream(context.Context, *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	return func(yield func(llm.StreamEvent, error) bool) { yield(llm.StreamEvent{}, m.err()) }
}

func TestProviderInterruptionInInboxAndRunPage(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	agent := &actoviq.AgentSpec{ID: "writer", Provider: downModel{}, Model: "m-1"}
	res, err := f.rt.Run(context.Background(), agent, &actoviq.Input{RunID: "run-p", Items: []item.Item{item.UserText("hello")}})
	if err != nil || res.Status != actoviq.StatusInterrupted {
		t.Fatalf("run: %v %+v", err, res)
	}
	var in console.Inbox
	f.call("GET", "/api/v1/inbox?kind=provider", tokenAnon, "").json(t, &in)
	if len(in.Items) != 1 || in.Items[0].RunID != "run-p" || in.Items[0].AgentID != "writer" || in.Items[0].Reason == "" {
		t.Fatalf("inbox: %+v", in.Items)
	}
	b, _ := f.login("bob", tokenAnon)
	page := string(f.callWith(b.c, "GET", "/runs/run-p", "", "").body)
	for _, want := range []string{"provider", "down · m-1", "req-503", "503 (overloaded)", "3s", "one new model call"} {
		if !strings.Contains(page, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	if strings.Contains(page, `data-decide`) {
		t.Error("a provider interruption offers call decisions")
	}
	if r := f.call("GET", "/api/v1/runs/run-p", tokenAnon, ""); r.status != http.StatusOK || !strings.Contains(string(r.body), `"request_id":"req-503"`) {
		t.Errorf("API: %d %s", r.status, r.body)
	}
}
