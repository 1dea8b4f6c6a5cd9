// Package tool is a stub of the real package's API surface the analyzer
// matches on (same import path).
package tool

import (
	"context"
	"encoding/json"
)

type Effect int

const (
	SideEffect Effect = iota
	IdempotentWrite
	Read
)

type Spec struct {
	Name        string
	Description string
	Effect      Effect
	InputSchema json.RawMessage
}

type Result struct{ Content string }

type Tool interface {
	Spec() Spec
	Call(ctx context.Context, args json.RawMessage) (Result, error)
}

func Func[In, Out any](spec Spec, fn func(ctx context.Context, in In) (Out, error)) Tool { return nil }

func IdempotencyKey(ctx context.Context) string { return "" }
