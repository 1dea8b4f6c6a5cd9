package openai

import (
	"bytes"
	"testing"

	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/internal/wiretest"
)

func addSeeds(f *testing.F, glob string) {
	wiretest.AddSeeds(f, glob,
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":-1}]}}]}\n\n",
		"data: {\"error\":{\"code\":429}}\n\n",
		"event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"item\":{\"type\":\"function_call\",\"arguments\":\"[\"}}\n\n")
}

var feed = wiretest.Feed

func FuzzChatStream(f *testing.F) {
	addSeeds(f, "chat_*.sse")
	f.Fuzz(func(t *testing.T, data []byte) {
		feed(t, data, newChatAcc("openai.chat"), chatErrorEvent)
	})
}

func FuzzResponsesStream(f *testing.F) {
	addSeeds(f, "resp_*.sse")
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &client{name: "openai.responses"}
		feed(t, data, &respAcc{c: c, items: map[int][]item.Item{}, args: map[int]*bytes.Buffer{},
			text: map[int]*bytes.Buffer{}, refusal: map[int]*bytes.Buffer{}, seq: -1}, respErrorEvent)
	})
}
