package actoviq

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/actoviq/actoviq-go/internal/redact"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
)

// Data hygiene (docs/design.md#events-and-redaction): besides the arguments, every field the runtime
// persists or emits that can carry a secret is redacted at its source:
// free text (error messages, interruption reasons, probe evidence, error
// results) loses secret-looking assignments and the call's own secret
// argument values; JSON (result data, operator results, evidence) loses
// the values of secret-looking keys.

// maxText bounds one free-text field the runtime records (an error
// message, a reason, probe evidence, a note), and maxErrorJSON a persisted
// error object: the output bound (Limits.MaxToolOutput) covers results,
// these cover the text around them, so that no row grows without bound.
const (
	maxText      = 16 << 10
	maxErrorJSON = 64 << 10
)

// boundText cuts s to maxText bytes, saying how long it was.
func boundText(s string) string {
	if len(s) <= maxText {
		return s
	}
	return truncateUTF8(s, maxText) + fmt.Sprintf("… [truncated: %d bytes in all]", len(s))
}

// redactText cleans free text that concerns callID ("" for none).
func (d *drive) redactText(callID, s string) string {
	if s == "" {
		return s
	}
	s = boundText(s)
	if callID != "" {
		s = d.secretsOf(callID).Text(s)
	}
	return d.rt.redactor.Text(s)
}

// redactErrJSON cleans a persisted error or evidence object.
func (d *drive) redactErrJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return b
	}
	if len(b) > maxErrorJSON {
		b = mustJSON(map[string]any{"truncated": true, "size": len(b), "head": boundText(string(b))})
	}
	return d.rt.redactor.JSONText(b)
}

// redactDecision cleans a recorded decision (approval or resolution).
func (d *drive) redactDecision(callID string, dec *store.DecisionRecord) *store.DecisionRecord {
	if dec == nil {
		return nil
	}
	c := *dec
	c.Reason, c.Note, c.Message = d.redactText(callID, c.Reason), d.redactText(callID, c.Note), d.redactText(callID, c.Message)
	if len(c.Result) > 0 {
		c.Result = scrub(d.redactJSON(c.Result), d.secretsOf(callID))
		if len(c.Result) > DefaultMaxToolOutput {
			// The result itself is bounded in the entry; the record of the
			// decision keeps its size only, so no row grows without bound.
			c.Result = mustJSON(map[string]any{"truncated": true, "size": len(c.Result)})
		}
	}
	c.Evidence = d.redactErrJSON(c.Evidence)
	return &c
}

// redactProbe cleans a probe's answer before it is shown or stored.
func (d *drive) redactProbe(callID string, ans *ProbeAnswer) *ProbeAnswer {
	if ans == nil {
		return nil
	}
	c := *ans
	c.Evidence, c.Error = d.redactText(callID, c.Evidence), d.redactText(callID, c.Error)
	return &c
}

// redactEntry cleans the free-text and JSON fields of a ledger entry
// about to be written.
func (d *drive) redactEntry(en *store.LedgerEntry) {
	en.Error = d.redactErrJSON(en.Error)
	en.Approval = d.redactDecision(en.CallID, en.Approval)
	en.Resolution = d.redactDecision(en.CallID, en.Resolution)
}

func (d *drive) redactJSON(b json.RawMessage) json.RawMessage {
	out, _, err := d.rt.redactor.JSON(b)
	if err != nil {
		return b
	}
	return out
}

// redactValidItem is redactItem for an item that passed Validate, whose
// JSON is not checked again. Arguments with nothing to redact are
// returned as they are (the same bytes).
func (d *drive) redactValidItem(it item.Item) item.Item {
	if it.Type == item.TypeToolCall && it.ToolCall != nil {
		red := d.rt.redactor.MarshaledJSON(it.ToolCall.Arguments)
		if sameBytes(red, it.ToolCall.Arguments) {
			return it // nothing redacted: the item as it is, not a copy
		}
		tc := *it.ToolCall
		tc.Arguments = red
		it.ToolCall = &tc
		return it
	}
	return d.redactItem(it)
}

// redactItem returns the item as it may be persisted: tool-call arguments
// lose secret-looking values.
func (d *drive) redactItem(it item.Item) item.Item {
	switch {
	case it.Type == item.TypeToolCall && it.ToolCall != nil:
		tc := *it.ToolCall
		tc.Arguments = d.redactJSON(tc.Arguments)
		it.ToolCall = &tc
	case it.Type == item.TypeToolResult && it.ToolResult != nil && len(it.ToolResult.Data) > 0:
		// A tool result given as input (a session imported from elsewhere).
		tr := *it.ToolResult
		tr.Data = d.redactJSON(tr.Data)
		it.ToolResult = &tr
	}
	return it
}

// secretsOf returns the string values that redaction removes from a
// call's arguments, as a redact.Secrets (which also takes the forms they
// leak in: JSON-escaped, URL-escaped, their long words; and replaces the
// longest first, so that no tail of a secret that another one starts is
// left), so that text derived from the arguments (a validation message, a
// tool's echo) can be scrubbed before it is persisted; nil for none. It
// knows them only in the process that received the arguments; elsewhere
// the arguments were never seen unredacted.
func (d *drive) secretsOf(callID string) *redact.Secrets {
	raw, ok := d.rawArgs[callID]
	if !ok {
		return nil
	}
	// Each transition of a call asks: decode its arguments once. (Calls
	// of one batch may run at once.)
	d.secretsMu.Lock()
	defer d.secretsMu.Unlock()
	if m, ok := d.secrets[callID]; ok && (sameBytes(m.raw, raw) || bytes.Equal(m.raw, raw)) {
		return m.out
	}
	out := d.findSecrets(raw)
	if d.secrets == nil {
		d.secrets = map[string]secretsMemo{}
	}
	d.secrets[callID] = secretsMemo{raw: raw, out: out}
	return out
}

// noSecrets records that redaction left a call's raw arguments as they
// are: no value under a secret key but the placeholder itself, so there
// is nothing for secretsOf to find (and no need to decode them for it).
// sizeSecrets makes the secrets memo with room for n calls when there is
// none yet, so that a turn of many calls does not grow it call by call.
func (d *drive) sizeSecrets(n int) {
	d.secretsMu.Lock()
	defer d.secretsMu.Unlock()
	if d.secrets == nil && n > 8 {
		d.secrets = make(map[string]secretsMemo, n)
	}
}

func (d *drive) noSecrets(callID string, raw json.RawMessage) {
	d.secretsMu.Lock()
	defer d.secretsMu.Unlock()
	if d.secrets == nil {
		d.secrets = map[string]secretsMemo{}
	}
	d.secrets[callID] = secretsMemo{raw: raw}
}

// sameBytes reports whether a and b are the very same bytes (one slice).
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// secretsMemo is what secretsOf found in a call's raw arguments.
type secretsMemo struct {
	raw json.RawMessage
	out *redact.Secrets
}

// findSecrets returns the secret values of raw arguments (secretsOf); nil
// for none.
func (d *drive) findSecrets(raw json.RawMessage) *redact.Secrets {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	var out []string
	var walk func(v any, secret bool)
	walk = func(v any, secret bool) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(e, secret || d.rt.redactor.IsSecretKey(k))
			}
		case []any:
			for _, e := range x {
				walk(e, secret)
			}
		case string:
			if secret && len(x) >= 4 {
				out = append(out, x)
			}
		}
	}
	walk(v, false)
	if len(out) == 0 {
		return nil
	}
	return redact.NewSecrets(out...)
}

// scrub replaces secret values in persisted JSON text. The placeholder has
// no quote or backslash, so a value inside a JSON string stays valid JSON;
// when a replacement would still break it (a secret that holds a quote),
// the document's strings are replaced one by one instead.
func scrub(b json.RawMessage, secrets *redact.Secrets) json.RawMessage {
	if len(b) == 0 || secrets == nil {
		return b
	}
	if s := secrets.Text(string(b)); json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	return secrets.JSON(b)
}
