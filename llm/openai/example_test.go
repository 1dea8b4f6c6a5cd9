package openai_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/openai"
	"github.com/actoviq/actoviq-go/llm/transport"
)

// An OpenAI-compatible local server (here a fake one) needs only a base URL.
func ExampleNewChat() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c1","model":"llama3","choices":[{"index":0,"delta":{"content":"Hi "}}]}`+"\n\n")
		fmt.Fprint(w, `data: {"id":"c1","model":"llama3","choices":[{"index":0,"delta":{"content":"there."},"finish_reason":"stop"}]}`+"\n\n")
		fmt.Fprint(w, `data: {"id":"c1","model":"llama3","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2}}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()

	chat, err := openai.NewChat(&openai.Config{BaseURL: srv.URL + "/v1", NoAuth: true, Options: transport.Options{HTTPClient: srv.Client()}})
	if err != nil {
		panic(err)
	}
	req := &llm.Request{Model: "llama3", Items: []item.Item{item.UserText("Say hi")}}
	for ev, err := range chat.Stream(context.Background(), req) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		switch ev.Type {
		case llm.EventTextDelta:
			fmt.Printf("delta %q\n", ev.Delta)
		case llm.EventDone:
			fmt.Println(ev.Response.Text(), ev.Response.StopReason, ev.Response.Usage.Total())
		}
	}
	// Output:
	// delta "Hi "
	// delta "there."
	// Hi there. end_turn 11
}
