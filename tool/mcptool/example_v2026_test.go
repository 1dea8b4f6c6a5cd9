package mcptool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/mcptool"
)

// A server speaking protocol 2026-07-28 asks for input with a
// multi-round-trip answer (input_required). The client records the round
// as a handle of the call before anyone is asked, records the answers
// before it sends the continuation, and sends the continuation with the
// call's idempotency key: the same logical call, not a replay. Under the
// actoviq runtime the handles go to the call's ledger entry, so that a
// crash in between resumes the continuation (Tool.Resume).
func Example_multiRoundTrip() {
	server := mcp.NewServer(&mcp.Implementation{Name: "bank", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "pay", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ans, ok := req.Params.InputResponses["confirm"].(*mcp.ElicitResult)
			if !ok {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
					"confirm": &mcp.ElicitParams{Message: "Pay 40 EUR to ACME?"}}, RequestState: "r1"}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
				Text: fmt.Sprintf("%s: paid=%v (key %v)", ans.Action, ans.Content["ok"], req.Params.Meta[mcptool.MetaIdempotencyKey])}}}, nil
		})
	// Stateless streamable HTTP: the go-sdk serves 2026-07-28 there.
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	defer ts.Close()

	src, err := mcptool.New(&mcptool.Config{Servers: map[string]*mcptool.ServerConfig{"bank": {URL: ts.URL}}},
		&mcptool.Options{Elicit: func(_ context.Context, r *mcptool.ElicitRequest) (*mcptool.ElicitResult, error) {
			fmt.Println("asked:", r.Message)
			return &mcptool.ElicitResult{Action: mcptool.ElicitAccept, Content: map[string]any{"ok": true}}, nil
		}})
	if err != nil {
		panic(err)
	}
	defer src.Close()
	tools, err := src.ServerTools(context.Background(), "bank")
	if err != nil {
		panic(err)
	}
	fmt.Println("protocol:", src.ProtocolVersion("bank"))

	// The runtime records handles on the ledger; here they are printed.
	rec := tool.HandleRecorderFunc(func(_ context.Context, h tool.Handle) error {
		var ih mcptool.InputHandle
		_ = json.Unmarshal(h.Data, &ih)
		fmt.Printf("recorded %s round %d step %s\n", h.Kind, ih.Round, ih.Step)
		return nil
	})
	ctx := tool.WithHandleRecorder(tool.WithIdempotencyKey(context.Background(), "run-1:call-1"), rec)
	res, err := tools[0].Call(ctx, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content)
	// Output:
	// protocol: 2026-07-28
	// recorded mcp.input_required round 1 step asked
	// asked: Pay 40 EUR to ACME?
	// recorded mcp.input_required round 1 step sending
	// accept: paid=true (key run-1:call-1)
}
