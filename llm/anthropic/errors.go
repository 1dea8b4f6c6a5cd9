package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/internal/wire"
	"github.com/actoviq/actoviq-go/llm/transport"
)

// errorBody is {"type":"error","error":{"type","message"},"request_id"}.
type errorBody struct {
	Type  string `json:"type"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

// errorStatus is the HTTP status an error type stands for.
func errorStatus(typ string) int {
	switch typ {
	case "invalid_request_error":
		return 400
	case "authentication_error":
		return 401
	case "billing_error":
		return 402
	case "permission_error":
		return 403
	case "not_found_error":
		return 404
	case "request_too_large":
		return 413
	case "rate_limit_error":
		return 429
	case "timeout_error":
		return 504
	case "overloaded_error":
		return 529
	}
	return 500 // api_error and anything unknown
}

// errorEvent classifies an "error" event inside a 200 stream.
func errorEvent(ev transport.SSEEvent) (int, bool) {
	if ev.Type != "error" && (ev.Type != "" || !bytes.Contains(ev.Data, []byte(`"error"`))) {
		return 0, false
	}
	var eb errorBody
	if json.Unmarshal(ev.Data, &eb) != nil || (ev.Type != "error" && eb.Type != "error") {
		if ev.Type == "error" {
			return 500, true
		}
		return 0, false
	}
	if eb.Error == nil {
		return 500, true
	}
	return errorStatus(eb.Error.Type), true
}

// providerError turns a transport failure into an *llm.ProviderError.
func (p *Messages) providerError(err error) error {
	var se *transport.StatusError
	var te *transport.TransportError
	switch {
	case errors.As(err, &se):
		pe := &llm.ProviderError{Provider: p.name, Status: se.Status, Retryable: se.Retryable, Err: err}
		if se.Header != nil {
			pe.RequestID = se.Header.Get("Request-Id")
		}
		if se.Cause != nil && errors.Is(se.Cause, transport.ErrRetryWaitTooLong) {
			pe.RetryAfter = se.Wait
		}
		var eb errorBody
		if json.Unmarshal(se.Body, &eb) == nil && eb.Error != nil {
			pe.Type, pe.Code, pe.Message = eb.Error.Type, eb.Error.Type, p.scrub(eb.Error.Message)
			if pe.RequestID == "" {
				pe.RequestID = eb.RequestID
			}
			pe.Err = wire.Brief(se) // the message came from the body: do not print it twice
		}
		pe.Hint = p.keyHint(se.Status)
		return pe
	case errors.As(err, &te):
		return &llm.ProviderError{Provider: p.name, Retryable: te.Retryable, Err: err}
	}
	return err
}

// keyHint names where the key came from on an authentication failure.
func (p *Messages) keyHint(status int) string {
	if p.apiKey == "" && (status == 401 || status == 403) {
		return "no API key was sent: set ANTHROPIC_API_KEY or Config.APIKey"
	}
	return wire.KeyHint(status, p.keySource)
}
