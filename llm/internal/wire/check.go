package wire

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/actoviq/actoviq-go/llm"
)

// Check is what every adapter does before anything is sent: the model must
// be able to serve the request (streaming too, when stream is set), and the
// transcript must have a result for every tool call.
func Check(provider string, caps llm.Capabilities, req *llm.Request, stream bool) error {
	if req == nil {
		return fmt.Errorf("%s: nil request", provider)
	}
	check := caps.Check
	if stream {
		check = caps.CheckStream
	}
	if err := check(req); err != nil {
		return err
	}
	return llm.ValidateTranscript(req.Items)
}

// ParseArguments parses a tool call's joined argument JSON once, when the
// call is complete. Empty text is an empty object (models call
// parameterless tools with ""); anything but a JSON object is refused.
func ParseArguments(s string) (json.RawMessage, bool) {
	b := bytes.TrimSpace([]byte(s))
	if len(b) == 0 {
		return json.RawMessage(`{}`), true
	}
	if b[0] != '{' || !json.Valid(b) {
		return nil, false
	}
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return nil, false
	}
	return buf.Bytes(), true
}
