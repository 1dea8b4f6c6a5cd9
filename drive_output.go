package actoviq

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/actoviq/actoviq-go/internal/jsonenc"
	"github.com/actoviq/actoviq-go/tool"
)

// outputNotice is what the ledger keeps about a result the runtime had to
// change before recording it: the evidence an operator needs, in the
// entry's Error under the key "output".
type outputNotice struct {
	// Truncated: the result was larger than Limits.MaxToolOutput.
	Truncated bool `json:"truncated,omitempty"`
	// Size is the result's full size in bytes (content plus data).
	Size int `json:"size,omitempty"`
	// Limit is the bound that applied.
	Limit int `json:"limit,omitempty"`
	// DataDropped: the structured data was not kept (too large, or not JSON).
	DataDropped bool `json:"data_dropped,omitempty"`
	// InvalidData: the tool's Result.Data was not JSON.
	InvalidData string `json:"invalid_data,omitempty"`
	// NotUTF8 counts the bytes of the tool's Result.Data that were not
	// UTF-8, each replaced by U+FFFD (as its Content's are when encoded).
	NotUTF8 int `json:"not_utf8,omitempty"`
}

// boundResult makes a result fit to be recorded: structured data that is
// not JSON is dropped and the result becomes an error result the model
// sees; bytes of the data that are not UTF-8 are replaced by U+FFFD (a
// store refuses them: PostgreSQL's text holds UTF-8 only), as encoding
// the Content replaces its own; secret-looking keys in the data are redacted; a result larger
// than the limit is truncated with a note the model sees. The notice is
// nil when nothing had to change.
func (d *drive) boundResult(r tool.Result) (tool.Result, *outputNotice) {
	var n outputNotice
	changed := false
	if len(r.Data) > 0 && !jsonenc.Valid(r.Data) {
		changed = true
		n.DataDropped, n.InvalidData = true, fmt.Sprintf("%d bytes that are not JSON", len(r.Data))
		r.Data = nil
		r.IsError = true
		r.Content = withNote(r.Content, "The tool ran, but its structured output (Result.Data) was not valid JSON, so it was not recorded; this result is an error for that reason, not because the call failed.")
	}
	if len(r.Data) > 0 {
		if r.Data, n.NotUTF8 = jsonenc.ReplaceInvalidUTF8(r.Data); n.NotUTF8 > 0 {
			changed = true
		}
		r.Data = d.rt.redactor.MarshaledJSON(r.Data) // valid: checked just above
	}
	limit := d.limits.MaxToolOutput
	if limit <= 0 { // a drive without an agent (Decide)
		limit = DefaultMaxToolOutput
	}
	if size := len(r.Content) + len(r.Data); size > limit {
		changed = true
		n.Truncated, n.Size, n.Limit = true, size, limit
		if len(r.Data) > 0 {
			r.Data, n.DataDropped = nil, true
		}
		note := fmt.Sprintf("[actoviq: this result was truncated: the tool returned %d bytes, over the limit of %d bytes", size, limit)
		if n.DataDropped {
			note += "; its structured data was dropped"
		}
		note += ".]"
		keep := limit - len(note) - 1
		if keep < 0 {
			keep = 0
		}
		r.Content = truncateUTF8(r.Content, keep) + "\n" + note
	}
	if r.IsError {
		// An error result quotes error text, which may quote a secret.
		r.Content = d.rt.redactor.Text(r.Content)
	}
	if !changed {
		return r, nil
	}
	notice := n // only a result that changed puts its notice on the heap
	return r, &notice
}

func withNote(content, note string) string {
	if content == "" {
		return note
	}
	return content + "\n" + note
}

// truncateUTF8 cuts s to at most n bytes without splitting a rune.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// withOutputNotice adds the notice to a ledger entry's persisted error
// object under "output", keeping what is there.
func withOutputNotice(errJSON json.RawMessage, n *outputNotice) json.RawMessage {
	if n == nil {
		return errJSON
	}
	obj := map[string]json.RawMessage{}
	if len(errJSON) > 0 && json.Unmarshal(errJSON, &obj) != nil {
		obj = map[string]json.RawMessage{"previous": errJSON}
	}
	obj["output"] = mustJSON(n)
	return mustJSON(obj)
}
