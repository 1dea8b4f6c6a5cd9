package providertest

import (
	"net/http"
	"testing"

	"github.com/actoviq/actoviq-go/llm"
)

// Backend describes a provider adapter under test.
type Backend struct {
	// Name labels failures.
	Name string

	// New builds the provider for one test from env. It must use a clock
	// that never sleeps and no jitter, so that retries cost nothing, and
	// declare Model with tools and streaming and NoToolsModel with
	// streaming but without tools.
	New func(t *testing.T, env Env) llm.Provider

	// Model is a model with every capability the suite uses (tools and
	// streaming).
	Model string
	// NoToolsModel is declared to New with streaming but without tools.
	NoToolsModel string

	// RequestIDHeader is the response header the provider reports its
	// request id in ("X-Request-Id", "Request-Id"). The fake server sets
	// it on every response.
	RequestIDHeader string

	Fixtures Fixtures
}

// Env is what the suite hands Backend.New.
type Env struct {
	// BaseURL is the fake server's root URL, without a trailing slash.
	// The server answers on every path, so the adapter may append its own
	// prefix ("/v1").
	BaseURL string
	// APIKey must be sent as the provider sends keys. The suite checks
	// that it reaches the server and never appears in an error or event.
	APIKey string
	// HTTPClient sends the requests; the suite closes its idle
	// connections at test cleanup.
	HTTPClient *http.Client
	// MaxRetries is the transport's retry budget for this test.
	MaxRetries int
}

// Fixtures are response bodies in the provider's wire format. Streams are
// Server-Sent Events, with each event ended by a blank line ("\n\n").
type Fixtures struct {
	// TextStream answers with plain text (end_turn) and usage. It must
	// emit at least one stream event before its last SSE event.
	TextStream []byte
	// TextJSON is the non-streaming body of the same answer: the same
	// text and usage as TextStream.
	TextJSON []byte
	// ToolStream answers with one tool call (tool_use).
	ToolStream []byte
	// ToolJSON, if set, is a non-streaming body with at least one tool
	// call (tool_use).
	ToolJSON []byte
	// ParallelStream answers with two or more tool calls (tool_use).
	ParallelStream []byte

	// Error400 is an error body served with status 400.
	Error400 []byte
	// ServerErrorStatus and ServerError are a retryable 5xx answer (an
	// overloaded server).
	ServerErrorStatus int
	ServerError       []byte
	// ErrorWithMessage returns an error body (served with status 400 or
	// 503) whose message is msg, as a server that echoes credentials
	// would send it.
	ErrorWithMessage func(msg string) []byte

	// ErrorEventStream, if the protocol has one, is a 200 stream whose
	// first event is an error event that the adapter classifies as
	// ErrorEventStatus (a 5xx status, so retryable).
	ErrorEventStream []byte
	ErrorEventStatus int

	// ServerToolStream and ServerToolJSON, if the protocol has tools the
	// provider runs itself, are one answer (stream and whole body) with
	// such a block whose input is streamed in fragments like a client
	// tool call's (Anthropic's server_tool_use), and its result.
	// ServerToolInput is text of that input; it must survive both modes
	// and go back in the next request.
	ServerToolStream, ServerToolJSON []byte
	ServerToolInput                  string
}

func (b *Backend) validate(t *testing.T) {
	t.Helper()
	f := &b.Fixtures
	switch {
	case b.New == nil:
		t.Fatal("providertest: Backend.New is nil")
	case b.Model == "" || b.NoToolsModel == "":
		t.Fatal("providertest: Backend.Model and NoToolsModel must be set")
	case b.RequestIDHeader == "":
		t.Fatal("providertest: Backend.RequestIDHeader is empty")
	case len(f.TextStream) == 0 || len(f.TextJSON) == 0 || len(f.ToolStream) == 0 || len(f.ParallelStream) == 0:
		t.Fatal("providertest: the text and tool fixtures are required")
	case len(f.Error400) == 0 || len(f.ServerError) == 0 || f.ErrorWithMessage == nil:
		t.Fatal("providertest: the error fixtures are required")
	case f.ServerErrorStatus < 500 || f.ServerErrorStatus > 599:
		t.Fatalf("providertest: ServerErrorStatus %d is not a 5xx status", f.ServerErrorStatus)
	case len(f.ErrorEventStream) > 0 && (f.ErrorEventStatus < 500 || f.ErrorEventStatus > 599):
		t.Fatalf("providertest: ErrorEventStatus %d is not a 5xx status", f.ErrorEventStatus)
	case (len(f.ServerToolStream) > 0) != (len(f.ServerToolJSON) > 0) || (len(f.ServerToolStream) > 0) != (f.ServerToolInput != ""):
		t.Fatal("providertest: ServerToolStream, ServerToolJSON and ServerToolInput go together")
	}
	if len(sseBlocks(f.TextStream)) < 2 {
		t.Fatal("providertest: TextStream needs at least two events")
	}
}
