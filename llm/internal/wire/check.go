package wire

import (
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
