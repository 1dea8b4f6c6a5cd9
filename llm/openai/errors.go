package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/internal/wire"
	"github.com/actoviq/actoviq-go/llm/transport"
)

// apiError is OpenAI's error object: {"error":{"message","type","param","code"}}.
// code is a string on OpenAI and sometimes a number on compatible servers.
type apiError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

func (a *apiError) code() string {
	if len(a.Code) == 0 || string(a.Code) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(a.Code, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(a.Code))
}

// errorStatus is the HTTP status an error reported inside a 200 stream
// stands for, so that the transport can classify it.
func errorStatus(typ, code string) int {
	if n, err := strconv.Atoi(code); err == nil && n >= 400 && n <= 599 {
		return n
	}
	for _, s := range []string{code, typ} {
		switch s {
		case "rate_limit_exceeded", "rate_limit_error", "insufficient_quota", "billing_hard_limit_reached", "tokens", "requests":
			return 429
		case "invalid_request_error", "invalid_prompt", "context_length_exceeded", "invalid_value":
			return 400
		case "authentication_error", "invalid_api_key":
			return 401
		case "permission_error":
			return 403
		case "not_found_error", "model_not_found":
			return 404
		case "server_error", "internal_error", "api_error":
			return 500
		case "server_is_overloaded", "overloaded_error", "service_unavailable":
			return 503
		}
	}
	return 500
}

// providerError turns a transport failure into an *llm.ProviderError. The
// transport has already scrubbed secrets from bodies and messages.
func (c *client) providerError(err error) error {
	var se *transport.StatusError
	var te *transport.TransportError
	switch {
	case errors.As(err, &se):
		pe := &llm.ProviderError{Provider: c.name, Status: se.Status, Retryable: se.Retryable, Err: err}
		if se.Header != nil {
			pe.RequestID = se.Header.Get("X-Request-Id")
		}
		if se.Cause != nil && errors.Is(se.Cause, transport.ErrRetryWaitTooLong) {
			pe.RetryAfter = se.Wait
		}
		c.fillFromBody(pe, se.Body)
		if pe.Message != "" {
			pe.Err = wire.Brief(se) // the message came from the body: do not print it twice
		}
		pe.Hint = c.keyHint(se.Status)
		return pe
	case errors.As(err, &te):
		return &llm.ProviderError{Provider: c.name, Retryable: te.Retryable, Err: err}
	}
	return err
}

// fillFromBody reads {"error":{...}}, a Responses "error" event
// {"type":"error","code","message"}, or a response.failed event.
func (c *client) fillFromBody(pe *llm.ProviderError, body []byte) {
	var doc struct {
		Error    *apiError       `json:"error"`
		Type     string          `json:"type"`
		Code     json.RawMessage `json:"code"`
		Message  string          `json:"message"`
		Response *struct {
			Error *apiError `json:"error"`
		} `json:"response"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return
	}
	var ae *apiError
	switch {
	case doc.Error != nil:
		ae = doc.Error
	case doc.Response != nil && doc.Response.Error != nil:
		ae = doc.Response.Error
		if ae.Type == "" {
			ae.Type = doc.Type
		}
	case doc.Message != "":
		ae = &apiError{Message: doc.Message, Type: doc.Type, Code: doc.Code}
	default:
		return
	}
	pe.Message = c.scrub(ae.Message)
	pe.Type = ae.Type
	pe.Code = ae.code()
}

// keyHint names where the key came from on an authentication failure.
func (c *client) keyHint(status int) string {
	if c.apiKey == "" && (status == 401 || status == 403) {
		return "no API key was sent: set OPENAI_API_KEY or Config.APIKey"
	}
	return wire.KeyHint(status, c.keySource)
}

// finalCodes are error codes no retry can fix, whatever status they stand
// for: a quota or billing limit.
var finalCodes = map[string]bool{"insufficient_quota": true, "billing_hard_limit_reached": true, "billing_not_active": true}

// finalErrorEvent reports an error event (Chat's error chunk, a Responses
// "error" or "response.failed" event, in either shape) whose code is final.
func finalErrorEvent(ev transport.SSEEvent) bool {
	var doc struct {
		Code     json.RawMessage `json:"code"`
		Error    *apiError       `json:"error"`
		Response *struct {
			Error *apiError `json:"error"`
		} `json:"response"`
	}
	if json.Unmarshal(ev.Data, &doc) != nil {
		return false
	}
	codes := []string{(&apiError{Code: doc.Code}).code()}
	for _, e := range []*apiError{doc.Error, func() *apiError {
		if doc.Response != nil {
			return doc.Response.Error
		}
		return nil
	}()} {
		if e != nil {
			codes = append(codes, e.code(), e.Type)
		}
	}
	for _, c := range codes {
		if finalCodes[c] {
			return true
		}
	}
	return false
}
