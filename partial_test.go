package actoviq_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/store"
)

// brokenStream breaks its stream after a half-written tool call.
type brokenStream struct{}

func (brokenStream) Name() string { return "broken" }
func (brokenStream) Capabilities(string) llm.Capabilities {
	return llm.Capabilities{Tools: true, Streaming: true}
}
func (brokenStream) Generate(context.Context, *llm.Request) (*llm.Response, error) {
	return nil, errors.New("unused")
}
func (brokenStream) Stream(context.Context, *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	return func(yield func(llm.StreamEvent, error) bool) {
		partial := &llm.Response{Items: []item.Item{item.AssistantText("paying"),
			item.NewToolCall("c1", "pay", json.RawMessage(`{"amount":5,"api_key":"sk-part`))}}
		yield(llm.StreamEvent{}, &llm.StreamInterruptedError{Provider: "broken", Partial: partial, Err: errors.New("connection reset")})
	}
}

// Sibling of issue 10 break 5: a stream that broke inside a tool call's
// arguments left a partial item that is not valid; kept as evidence of a
// provider interruption, it made the checkpoint unencodable and the run
// stayed running. The evidence is kept in a form that always persists.
func TestBrokenStreamWithPartialToolCall(t *testing.T) {
	s := newSetup(t)
	a := &actoviq.AgentSpec{ID: "payer", Model: "m", Provider: brokenStream{}}
	res, err := s.rt.Run(s.ctx, a, &actoviq.Input{RunID: "r1"})
	if err != nil || res.Status != actoviq.StatusInterrupted || res.Interruptions[0].Kind != actoviq.InterruptProvider {
		t.Fatalf("%+v %v", res, err)
	}
	run, _ := s.st.RunGet(s.ctx, &store.RunGetParams{Tenant: "default", ID: "r1"})
	if run.Status != store.RunInterrupted {
		t.Fatalf("stored status %s", run.Status)
	}
	if txt := storeText(t, s, "r1"); strings.Contains(txt, "sk-part") || !strings.Contains(txt, "paying") {
		t.Fatal("want the partial output as redacted evidence")
	}
}
