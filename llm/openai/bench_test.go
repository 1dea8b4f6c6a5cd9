package openai_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/actoviq/actoviq-go/llm"
)

// BenchmarkChatStream measures one streamed call of 1000 text deltas
// through the adapter and the transport against a local server.
func BenchmarkChatStream(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&sb, "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok%d \"}}]}\n\n", i)
	}
	sb.WriteString("data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	body := sb.String()
	bd := setup(b, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(body)) })
	p := newChat(b, bd, nil)
	req := textRequest("gpt-test")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := llm.Collect(p.Stream(context.Background(), req))
		if err != nil || len(resp.Text()) == 0 {
			b.Fatal(err)
		}
	}
}
