package actoviq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/actoviq/actoviq-go/internal/jsonenc"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// malformedCall reports whether it is a tool call that is valid except
// for its arguments, which are not a JSON object (an array, a string,
// text that is not JSON). Such a call is recorded and answered with an
// error result; any other invalid item ends the run.
func malformedCall(it item.Item) bool {
	if it.Type != item.TypeToolCall || it.ToolCall == nil || it.ToolCall.Name == "" {
		return false
	}
	probe := it
	tc := *it.ToolCall
	tc.Arguments = json.RawMessage(`{}`)
	probe.ToolCall = &tc
	return probe.Validate() == nil && !isJSONObject(it.ToolCall.Arguments)
}

// argsNotUTF8 reports a tool call that is valid, but whose arguments
// hold bytes that are not UTF-8 inside a string (JSON decoding never
// makes them; a provider written in Go may hand them over). A store keeps
// text in UTF-8 only, and running the call with those bytes replaced
// would run arguments the model did not give: such a call is malformed
// too, recorded and answered, never run.
func argsNotUTF8(it item.Item) bool {
	return it.Type == item.TypeToolCall && it.ToolCall != nil && !utf8.Valid(it.ToolCall.Arguments)
}

// rawToUTF8 replaces each byte that is not UTF-8 in the raw JSON of a
// response item that is not a tool call (a raw item's value, structured
// output: valid JSON, whose strings may hold such bytes when a provider
// written in Go made them) by the escape \ufffd, as encoding a text
// replaces its own; a store keeps text in UTF-8 only. Nothing runs from
// these items. It changes the item (a copy) only, and returns how many bytes it
// replaced (ModelResponseData.NotUTF8).
func rawToUTF8(it *item.Item) int {
	n := 0
	if len(it.Structured) > 0 {
		var k int
		it.Structured, k = jsonenc.ReplaceInvalidUTF8(it.Structured)
		n += k
	}
	if it.Raw != nil && !utf8.Valid(it.Raw.Value) {
		r := *it.Raw
		var k int
		r.Value, k = jsonenc.ReplaceInvalidUTF8(r.Value)
		it.Raw = &r
		n += k
	}
	return n
}

// errArgsNotUTF8 marks a call argsNotUTF8 reports, in commitResponse.
var errArgsNotUTF8 = errors.New("tool call arguments are not UTF-8")

func isJSONObject(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && jsonenc.Valid(b)
}

// maxEvidenceText bounds the text kept of a value that is not JSON.
const maxEvidenceText = 4096

// argsEvidence is how the ledger keeps arguments that are not a JSON
// object, or not UTF-8: JSON values redacted as usual, each byte that is
// not UTF-8 replaced by U+FFFD (the kind says how many), anything else as
// a JSON string of the (redacted, bounded) text.
func (d *drive) argsEvidence(raw json.RawMessage) (json.RawMessage, string) {
	if jsonenc.Valid(raw) {
		kind := "a JSON " + jsonKind(raw)
		fixed, n := jsonenc.ReplaceInvalidUTF8(raw)
		if n > 0 {
			kind += fmt.Sprintf(" with %d bytes that are not UTF-8", n)
		}
		return d.redactJSON(fixed), kind
	}
	return mustJSON(truncateUTF8(d.rt.redactor.Text(string(raw)), maxEvidenceText)), "text that is not JSON"
}

func jsonKind(raw json.RawMessage) string {
	switch b := bytes.TrimSpace(raw); {
	case len(b) == 0:
		return "nothing"
	case b[0] == '[':
		return "array"
	case b[0] == '"':
		return "string"
	case b[0] == 'n':
		return "null"
	case b[0] == 't' || b[0] == 'f':
		return "boolean"
	}
	return "number"
}

// malformedEntry records a call whose arguments are not a JSON object, or
// not UTF-8 (argsNotUTF8). It is never executed: its entry is created
// committed with an error result the model sees, so it can correct
// itself. The transcript gets the call with empty arguments, which every
// provider accepts back.
func (d *drive) malformedEntry(turn, index int, tc item.ToolCall, effect tool.Effect) (*store.LedgerEntry, item.Item) {
	raw := tc.Arguments
	args, kind := d.argsEvidence(raw)
	msg := fmt.Sprintf("The arguments of this call were %s, not a JSON object, so the call was not run. Call the tool again with a JSON object as its arguments.", kind)
	reason := "the arguments are not a JSON object"
	if isJSONObject(raw) { // not UTF-8
		msg = fmt.Sprintf("The arguments of this call were %s (each shown here as U+FFFD), so the call was not run. Call the tool again with arguments in UTF-8.", kind)
		reason = "the arguments are not UTF-8"
	}
	r := tool.Result{Content: msg, IsError: true}
	tc.Arguments = json.RawMessage(`{}`)
	it := item.Item{Type: item.TypeToolCall, Role: item.RoleAssistant, ToolCall: &tc}
	now := d.rt.clock()
	return &store.LedgerEntry{Tenant: d.rt.tenant, RunID: d.run.ID, CallID: tc.ID, Turn: turn, Index: index,
		Tool: tc.Name, Effect: effect.String(), State: store.LedgerCommitted, IdempotencyKey: idempotencyKey(d.rt.tenant, d.run.ID, tc.ID),
		ArgsDigest: argsDigest(raw), Args: args, Result: mustJSON(r), CommittedAt: now,
		Error:      mustJSON(map[string]string{"code": "malformed_arguments", "message": fmt.Sprintf("arguments were %s", kind)}),
		Resolution: &store.DecisionRecord{Kind: "not-run", By: "runtime", At: now, Reason: reason},
	}, it
}

// refuse ends the run failed with code model_behavior, keeping the
// response as evidence in a form that can always be persisted.
func (d *drive) refuse(ctx context.Context, resp *llm.Response, msg string) (*RunResult, error) {
	d.cp.Rejected = d.evidence(resp.Items)
	d.cp.Usage = d.cp.Usage.Add(resp.Usage)
	d.cp.Error = &RunError{Code: CodeModelBehavior, Message: msg}
	return d.end(ctx, store.RunFailed, EvRunFailed)
}

// evidence is a refused response as it may be persisted: valid items
// redacted like any other, an invalid one as a raw item describing it
// (its type, why it is invalid, its fields as redacted text).
func (d *drive) evidence(items []item.Item) []item.Item {
	out := make([]item.Item, 0, len(items))
	for _, it := range items {
		if err := it.Validate(); err == nil {
			out = append(out, d.redactItem(it))
			continue
		} else {
			desc := map[string]any{"type": it.Type, "invalid": err.Error()}
			if it.Text != "" {
				desc["text"] = truncateUTF8(d.rt.redactor.Text(it.Text), maxEvidenceText)
			}
			if tc := it.ToolCall; tc != nil {
				args, _ := d.argsEvidence(tc.Arguments)
				desc["tool_call"] = map[string]any{"id": tc.ID, "name": tc.Name, "arguments": args}
			}
			out = append(out, item.Item{Type: item.TypeRaw, Raw: &item.Raw{Provider: "actoviq.rejected", Value: d.redactJSON(mustJSON(desc))}})
		}
	}
	return out
}

// effectOf is a tool's declared effect; an unknown tool is a side effect.
func (d *drive) effectOf(name string) tool.Effect {
	if t, ok := d.runner.Lookup(name); ok {
		return t.Spec().Effect
	}
	return tool.SideEffect
}
