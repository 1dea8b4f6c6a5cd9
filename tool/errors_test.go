package tool_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/actoviq/actoviq-go/tool"
)

func TestErrorJSONRoundTrip(t *testing.T) {
	t.Parallel()
	sentinel := map[tool.Kind]error{
		tool.KindNotFound: tool.ErrNotFound, tool.KindValidation: tool.ErrValidation, tool.KindDenied: tool.ErrDenied,
		tool.KindApprovalRequired: tool.ErrApprovalRequired, tool.KindTimeout: tool.ErrTimeout,
		tool.KindCancelled: tool.ErrCancelled, tool.KindExecution: tool.ErrExecution,
	}
	for kind, want := range sentinel {
		for _, unknown := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%v", kind, unknown), func(t *testing.T) {
				t.Parallel()
				orig := &tool.Error{Kind: kind, Tool: "pay", Started: unknown, OutcomeUnknown: unknown,
					Violations: []string{"/a: x"}, Err: fmt.Errorf("wrapped: %w", errors.New("cause"))}
				b, err := json.Marshal(orig)
				if err != nil {
					t.Fatal(err)
				}
				var back tool.Error
				if err := json.Unmarshal(b, &back); err != nil {
					t.Fatal(err)
				}
				if back.Error() != orig.Error() {
					t.Fatalf("message changed:\n%s\n%s", back.Error(), orig.Error())
				}
				if !errors.Is(&back, want) || errors.Is(&back, tool.ErrOutcomeUnknown) != unknown {
					t.Fatalf("decoded error does not match its sentinels: %v", &back)
				}
				for k, other := range sentinel {
					if k != kind && errors.Is(&back, other) {
						t.Fatalf("matches %s too", k)
					}
				}
				b2, _ := json.Marshal(&back)
				if string(b) != string(b2) {
					t.Fatalf("bytes not stable:\n%s\n%s", b, b2)
				}
			})
		}
	}
}

func TestErrorJSONShape(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(&tool.Error{Kind: tool.KindTimeout, Tool: "t", Started: true, OutcomeUnknown: true, Err: errors.New("deadline")})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"kind": "timeout", "tool": "t", "started": true, "outcome_unknown": true, "message": "deadline"}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("shape = %s", b)
	}
	var e tool.Error
	if err := json.Unmarshal([]byte(`{"kind":"exploded","tool":"t"}`), &e); err == nil {
		t.Fatal("unknown kind accepted")
	}
}

func TestEffect(t *testing.T) {
	t.Parallel()
	var zero tool.Effect
	if zero != tool.SideEffect || zero.String() != "side-effect" {
		t.Fatalf("zero effect is %s", zero)
	}
	for _, e := range []tool.Effect{tool.SideEffect, tool.IdempotentWrite, tool.Read} {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var back tool.Effect
		if err := json.Unmarshal(b, &back); err != nil || back != e {
			t.Fatalf("%s: %v %v", e, back, err)
		}
		if p, err := tool.ParseEffect(e.String()); err != nil || p != e {
			t.Fatalf("parse %s", e)
		}
	}
	if _, err := tool.ParseEffect("write"); err == nil {
		t.Fatal("unknown effect parsed")
	}
	var e tool.Effect
	if err := json.Unmarshal([]byte(`"Read"`), &e); err == nil {
		t.Fatal("unknown text decoded")
	}
	if _, err := json.Marshal(tool.Effect(9)); err == nil {
		t.Fatal("invalid effect encoded")
	}
}

func TestProbeOutcome(t *testing.T) {
	t.Parallel()
	var zero tool.ProbeOutcome
	if zero != tool.ProbeUnknown {
		t.Fatal("zero probe outcome must be unknown")
	}
	p := tool.Probe{Outcome: tool.ProbeCommitted, Result: &tool.Result{Content: "done"}, Evidence: "found txn 7"}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back tool.Probe
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, p) {
		t.Fatalf("%s -> %+v %v", b, back, err)
	}
	if err := json.Unmarshal([]byte(`{"outcome":"maybe"}`), &back); err == nil {
		t.Fatal("unknown outcome accepted")
	}
}
