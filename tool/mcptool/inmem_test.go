package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/mcptool"
)

const anyObject = `{"type":"object"}`

func annotated(name string, ann *mcp.ToolAnnotations) *mcp.Tool {
	return &mcp.Tool{Name: name, Description: "tool " + name, InputSchema: json.RawMessage(anyObject), Annotations: ann}
}

func okHandler(text string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
	}
}

func TestEffectMapping(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "effects", Version: "1"}, nil)
	tools := map[string]*mcp.ToolAnnotations{
		"ro":             {ReadOnlyHint: true},
		"ro_destructive": {ReadOnlyHint: true, DestructiveHint: ptr(true)},
		"idem_safe":      {IdempotentHint: true, DestructiveHint: ptr(false)},
		"idem_nil":       {IdempotentHint: true},                             // missing destructiveHint means destructive
		"idem_destr":     {IdempotentHint: true, DestructiveHint: ptr(true)}, // idempotent but destructive
		"not_idem":       {DestructiveHint: ptr(false)},
		"none":           nil,
		"overridden":     {ReadOnlyHint: true},
		"upgraded":       nil,
	}
	for n, a := range tools {
		srv.AddTool(annotated(n, a), okHandler(n))
	}
	overrides := map[string]mcptool.ToolOverride{
		"overridden": {Effect: ptr(tool.SideEffect), RequireApproval: true},
		"upgraded":   {Effect: ptr(tool.Read)},
	}
	want := map[bool]map[string]tool.Effect{
		true: {"ro": tool.Read, "ro_destructive": tool.Read, "idem_safe": tool.IdempotentWrite, "idem_nil": tool.SideEffect,
			"idem_destr": tool.SideEffect, "not_idem": tool.SideEffect, "none": tool.SideEffect, "overridden": tool.SideEffect, "upgraded": tool.Read},
		false: {"ro": tool.SideEffect, "ro_destructive": tool.SideEffect, "idem_safe": tool.SideEffect, "idem_nil": tool.SideEffect,
			"idem_destr": tool.SideEffect, "not_idem": tool.SideEffect, "none": tool.SideEffect, "overridden": tool.SideEffect, "upgraded": tool.Read},
	}
	for _, trusted := range []bool{true, false} {
		sc, _ := inMemory(srv)
		sc.TrustAnnotations = trusted
		sc.Tools = overrides
		src := newSource(t, map[string]*mcptool.ServerConfig{"srv": sc}, nil)
		ts, err := src.ServerTools(context.Background(), "srv")
		if err != nil {
			t.Fatal(err)
		}
		got := byName(t, ts)
		if len(got) != len(tools) {
			t.Fatalf("got %d tools, want %d", len(got), len(tools))
		}
		for n, eff := range want[trusted] {
			x := got["srv__"+n]
			if x == nil {
				t.Fatalf("tool srv__%s missing", n)
			}
			if x.Spec().Effect != eff {
				t.Errorf("trusted=%v %s: effect %s, want %s", trusted, n, x.Spec().Effect, eff)
			}
			if x.Server() != "srv" || x.RemoteName() != n {
				t.Errorf("%s: server %q remote %q", n, x.Server(), x.RemoteName())
			}
			if x.Spec().RequireApproval != (n == "overridden") {
				t.Errorf("%s: RequireApproval %v", n, x.Spec().RequireApproval)
			}
			if err := x.Spec().Validate(); err != nil {
				t.Errorf("%s: %v", n, err)
			}
		}
	}
}

func TestSchemasAndNames(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "schemas", Version: "1"}, nil)
	in := `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`
	out := `{"type":"object","properties":{"double":{"type":"integer"}},"required":["double"]}`
	srv.AddTool(&mcp.Tool{Name: "double", InputSchema: json.RawMessage(in), OutputSchema: json.RawMessage(out)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ N int }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "doubled"}}, StructuredContent: map[string]int{"double": 2 * a.N}}, nil
		})
	srv.AddTool(annotated("has space/and:colon", nil), okHandler("odd"))
	srv.AddTool(annotated("hidden", nil), okHandler("hidden"))
	sc, _ := inMemory(srv)
	sc.AllowedTools = []string{"double", "has space/and:colon"}
	src := newSource(t, map[string]*mcptool.ServerConfig{"s-1": sc}, nil)
	ts, err := src.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 {
		t.Fatalf("allow-list not applied: %d tools", len(ts))
	}
	got := map[string]tool.Tool{}
	for _, x := range ts {
		got[x.Spec().Name] = x
	}
	d := got["s-1__double"]
	if d == nil {
		t.Fatalf("names: %v", got)
	}
	var a, b any
	_ = json.Unmarshal(d.Spec().InputSchema, &a)
	_ = json.Unmarshal([]byte(in), &b)
	if string(mustJSON(t, a)) != string(mustJSON(t, b)) || len(d.Spec().OutputSchema) == 0 {
		t.Fatalf("schemas not passed through: %s / %s", d.Spec().InputSchema, d.Spec().OutputSchema)
	}
	// The odd name is made valid, stably.
	odd := mcptool.QualifiedName("s-1", "has space/and:colon")
	if got[odd] == nil || odd != mcptool.QualifiedName("s-1", "has space/and:colon") || !strings.HasPrefix(odd, "s-1__has_space_and_colon_") {
		t.Fatalf("odd name %q not found in %v", odd, got)
	}
	// Through a runner: output validated against the server's schema.
	r, err := tool.NewRunner(ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), &tool.Call{Name: "s-1__double", Args: json.RawMessage(`{"n":21}`), Key: "r:c"})
	if err != nil || string(res.Data) != `{"double":42}` || res.Content != "doubled" {
		t.Fatalf("run: %+v %v", res, err)
	}
	// Long names stay within the pattern and distinct.
	long1, long2 := mcptool.QualifiedName("s", strings.Repeat("a", 200)+"1"), mcptool.QualifiedName("s", strings.Repeat("a", 200)+"2")
	if len(long1) > 128 || long1 == long2 {
		t.Fatalf("long names %q %q", long1, long2)
	}
	// An allow-list naming a tool the server does not offer is an error
	// naming the server and field.
	sc2, _ := inMemory(srv)
	sc2.AllowedTools = []string{"nope"}
	src2 := newSource(t, map[string]*mcptool.ServerConfig{"s2": sc2}, nil)
	_, err = src2.Tools(context.Background())
	var ce *mcptool.ConfigError
	if !errors.As(err, &ce) || ce.Server != "s2" || ce.Field != "allowedTools" {
		t.Fatalf("want a config error for allowedTools: %v", err)
	}
}

// metaServer records the idempotency key of every call it receives.
type metaServer struct {
	mu   sync.Mutex
	keys []any
}

func (m *metaServer) handler(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	m.mu.Lock()
	v, ok := req.Params.Meta[mcptool.MetaIdempotencyKey]
	if !ok {
		v = "<absent>"
	}
	m.keys = append(m.keys, v)
	m.mu.Unlock()
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
}

func TestIdempotencyKeyInMeta(t *testing.T) {
	t.Parallel()
	ms := &metaServer{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "meta", Version: "1"}, nil)
	srv.AddTool(annotated("pay", nil), ms.handler)
	sc, cc := inMemory(srv)
	src := newSource(t, map[string]*mcptool.ServerConfig{"bank": sc}, nil)
	ts, err := src.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r, err := tool.NewRunner(ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"run1:call_1", "run1:call_2"} {
		if _, err := r.Run(context.Background(), &tool.Call{Name: "bank__pay", Args: json.RawMessage(`{}`), Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	// Called directly, without a key: no _meta key is invented.
	if _, err := ts[0].Call(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if got := strings.Join(anyStrings(ms.keys), " "); got != "run1:call_1 run1:call_2 <absent>" {
		t.Fatalf("keys seen by the server: %s", got)
	}
	if cc.count() != 1 || src.Connections("bank") != 1 {
		t.Fatalf("connection not reused: %d connects", cc.count())
	}
}

func anyStrings(vs []any) []string {
	var out []string
	for _, v := range vs {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}

func TestErrorKinds(t *testing.T) {
	t.Parallel()
	var calls sync.Map // tool → *int
	count := func(name string) {
		v, _ := calls.LoadOrStore(name, new(int))
		*(v.(*int))++
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "errs", Version: "1"}, nil)
	srv.AddTool(annotated("is_error", nil), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		count("is_error")
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "account closed"}}}, nil
	})
	srv.AddTool(annotated("invalid", nil), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		count("invalid")
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "amount must be positive"}
	})
	srv.AddTool(annotated("internal", nil), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		count("internal")
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "database exploded"}
	})
	started := make(chan struct{}, 1)
	srv.AddTool(annotated("hang", nil), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		count("hang")
		started <- struct{}{}
		<-ctx.Done() // the client drops the connection, which ends this
		return nil, ctx.Err()
	})
	srv.AddTool(annotated("ok", nil), okHandler("fine"))
	sc, cc := inMemory(srv)
	src := newSource(t, map[string]*mcptool.ServerConfig{"e": sc}, nil)
	list, err := src.ServerTools(context.Background(), "e")
	if err != nil {
		t.Fatal(err)
	}
	ts := byName(t, list)
	ctx := tool.WithIdempotencyKey(context.Background(), "r:c")

	// isError: a result the model sees, no runtime error.
	res, err := ts["e__is_error"].Call(ctx, nil)
	if err != nil || !res.IsError || res.Content != "account closed" {
		t.Fatalf("isError: %+v %v", res, err)
	}
	// Invalid params: a validation error; nothing ran; connection kept.
	_, err = ts["e__invalid"].Call(ctx, json.RawMessage(`{"amount":-1}`))
	var te *tool.Error
	if !errors.As(err, &te) || te.Kind != tool.KindValidation || !errors.Is(err, tool.ErrValidation) || errors.Is(err, tool.ErrOutcomeUnknown) ||
		!strings.Contains(err.Error(), "amount must be positive") {
		t.Fatalf("invalid params: %v", err)
	}
	if cc.count() != 1 {
		t.Fatalf("invalid params dropped the connection")
	}
	// Through a runner, the model would see it as an error result with the
	// server's reason; its outcome is known.
	r, _ := tool.NewRunner([]tool.Tool{ts["e__invalid"]}, nil)
	_, err = r.Run(ctx, &tool.Call{Name: "e__invalid", Key: "r:c2"})
	if !errors.Is(err, tool.ErrValidation) || errors.Is(err, tool.ErrOutcomeUnknown) {
		t.Fatalf("through the runner: %v", err)
	}
	// Any other JSON-RPC error: outcome unknown, connection dropped.
	_, err = ts["e__internal"].Call(ctx, nil)
	if !errors.Is(err, tool.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "not re-sent") {
		t.Fatalf("internal error: %v", err)
	}
	if _, err := ts["e__ok"].Call(ctx, nil); err != nil || cc.count() != 2 {
		t.Fatalf("no reconnect after an unknown outcome: %v, %d connects", err, cc.count())
	}
	// A timeout in flight: outcome unknown, never re-sent, next call
	// reconnects.
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = ts["e__hang"].Call(tctx, nil)
	<-started
	if !errors.Is(err, tool.ErrOutcomeUnknown) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timeout: %v", err)
	}
	if res, err := ts["e__ok"].Call(ctx, nil); err != nil || res.Content != "fine" || cc.count() != 3 || src.Connections("e") != 3 {
		t.Fatalf("after timeout: %+v %v, %d connects", res, err, cc.count())
	}
	for name, want := range map[string]int{"is_error": 1, "invalid": 2, "internal": 1, "hang": 1} {
		v, _ := calls.Load(name)
		if v == nil || *(v.(*int)) != want {
			t.Errorf("%s ran %v times, want %d", name, v, want)
		}
	}
	// After Close, calls fail at once and send nothing.
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ts["e__ok"].Call(ctx, nil); !errors.Is(err, mcptool.ErrClosed) || errors.Is(err, tool.ErrOutcomeUnknown) {
		t.Fatalf("after close: %v", err)
	}
}
