package tool

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

// Run after Check on the same Call validates nothing twice, and still
// refuses arguments that changed after Check.
func TestRunAfterCheckValidatesOnce(t *testing.T) {
	type in struct {
		N int `json:"n"`
	}
	schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]}`)
	f := Func(Spec{Name: "f", InputSchema: schema}, func(ctx context.Context, v in) (string, error) { return "ok", nil })
	r, err := NewRunner([]Tool{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := r.tools["f"]
	call := &Call{Name: "f", Args: json.RawMessage(`{"n":2}`)}
	if _, err := r.Check(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	if !call.checkedBy(e) {
		t.Fatal("Check did not mark the arguments it validated")
	}
	if _, err := r.Run(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	// New bytes: validated again, and refused.
	call.Args = json.RawMessage(`{"n":0}`)
	if call.checkedBy(e) {
		t.Fatal("new arguments count as checked")
	}
	_, err = r.Run(context.Background(), call)
	var te *Error
	if !errors.As(err, &te) || te.Kind != KindValidation {
		t.Fatalf("changed arguments: %v, want a validation error", err)
	}
	// Equal bytes in another slice are validated again too (and pass).
	call.Args = json.RawMessage(`{"n":2}`)
	if call.checkedBy(e) {
		t.Fatal("another slice counts as checked")
	}
	if _, err := r.Run(context.Background(), call); err != nil || !call.checkedBy(e) {
		t.Fatalf("Run: %v, checked %v", err, call.checkedBy(e))
	}
	// A Call checked against another tool's schema is not taken as checked.
	g := Func(Spec{Name: "f", InputSchema: schema}, func(ctx context.Context, v in) (string, error) { return "ok", nil })
	r2, _ := NewRunner([]Tool{g}, nil)
	if call.checkedBy(r2.tools["f"]) {
		t.Fatal("a mark from another runner counts")
	}
}
