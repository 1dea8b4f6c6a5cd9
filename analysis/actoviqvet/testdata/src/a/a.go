package a

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/httptool"
)

type in struct{}

var noEffect = tool.Spec{Name: "x"} // want `tool.Spec without an Effect`

var positional = tool.Spec{"x", "d", tool.Read, nil}

// A read needs no key.
var lookup = tool.Func(tool.Spec{Name: "lookup", Effect: tool.Read}, func(ctx context.Context, _ in) (string, error) {
	return "", nil
})

// A side effect that forgets the key.
var payNoKey = tool.Func(tool.Spec{Name: "pay", Effect: tool.SideEffect}, func(ctx context.Context, _ in) (string, error) { // want `never reads tool.IdempotencyKey`
	return "", nil
})

// Effect left out: a side effect too (and the literal is reported).
var implicit = tool.Func(tool.Spec{Name: "pay"}, func(ctx context.Context, _ in) (string, error) { // want `tool.Spec without an Effect` `never reads tool.IdempotencyKey`
	return "", nil
})

// Reads the key, but the request does not carry it.
var payHTTP = tool.Func(tool.Spec{Name: "pay", Effect: tool.SideEffect}, func(ctx context.Context, _ in) (string, error) {
	key := tool.IdempotencyKey(ctx)
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://bank/pay", strings.NewReader(key)) // want `without an Idempotency-Key header: send it with httptool.Client.Do`
	_, err := http.DefaultClient.Do(req)
	return "", err
})

// The right way.
var payGood = tool.Func(tool.Spec{Name: "pay", Effect: tool.SideEffect}, func(ctx context.Context, _ in) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://bank/pay", nil)
	req.Header.Set("idempotency-key", tool.IdempotencyKey(ctx))
	_, err := http.DefaultClient.Do(req)
	return "", err
})

// httptool's Client.Do sends the call's key: nothing to report.
var payHTTPTool = tool.Func(tool.Spec{Name: "pay", Effect: tool.SideEffect}, func(ctx context.Context, _ in) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://bank/pay", nil)
	_, err := bankClient.Do(req)
	return "", err
})

var bankClient, _ = httptool.New(nil)

// http.Post cannot carry the header.
var payPost = tool.Func(tool.Spec{Name: "pay", Effect: tool.SideEffect}, payWithPost)

func payWithPost(ctx context.Context, _ in) (string, error) {
	_ = tool.IdempotencyKey(ctx)
	_, err := http.Post("http://bank/pay", "application/json", nil) // want `cannot carry an Idempotency-Key header: use package tool/httptool`
	return "", err
}

// A key read in a helper the analyzer cannot follow, silenced.
var payHelper = tool.Func(tool.Spec{Name: "pay", Effect: tool.SideEffect}, // actoviq-vet:ignore
	func(ctx context.Context, _ in) (string, error) { return helper(ctx), nil }) // actoviq-vet:ignore

func helper(ctx context.Context) string { return tool.IdempotencyKey(ctx) }

// A Spec literal that defines no tool is not a tool definition.
func describe() tool.Spec { s := tool.Spec{Name: "lookup-failed"}; return s }

// A hand-written tool whose Spec forgets the effect.
type forgot struct{}

func (forgot) Spec() tool.Spec { return tool.Spec{Name: "f"} } // want `tool.Spec without an Effect`

func (forgot) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) { // want `never reads tool.IdempotencyKey`
	return tool.Result{}, nil
}

// A hand-written side-effect tool type.
type mailer struct{}

func (mailer) Spec() tool.Spec { return tool.Spec{Name: "mail", Effect: tool.SideEffect} }

func (mailer) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) { // want `never reads tool.IdempotencyKey`
	return tool.Result{}, nil
}

// A hand-written idempotent write keyed by its header map.
type keyed struct{}

func (keyed) Spec() tool.Spec { return tool.Spec{Name: "put", Effect: tool.SideEffect} }

func (keyed) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	req, _ := http.NewRequest("PUT", "http://x", nil)
	req.Header = http.Header{"Idempotency-Key": {tool.IdempotencyKey(ctx)}}
	return tool.Result{}, nil
}
