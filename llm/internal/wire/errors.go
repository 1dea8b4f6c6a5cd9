package wire

import (
	"errors"
	"fmt"

	"github.com/actoviq/actoviq-go/llm/transport"
)

// briefError is a transport status failure whose status and body the
// provider error already shows: its text says only how the transport
// ended, so the body is not printed twice. It unwraps to the
// *transport.StatusError.
type briefError struct {
	se   *transport.StatusError
	text string
}

func (e *briefError) Error() string { return e.text }
func (e *briefError) Unwrap() error { return e.se }

// Brief wraps se for an *llm.ProviderError that was filled from the
// response body. errors.As still finds se.
func Brief(se *transport.StatusError) error {
	var text string
	switch {
	case errors.Is(se.Cause, transport.ErrRetryWaitTooLong):
		text = fmt.Sprintf("not retried: the server asked to wait %v, above the retry cap", se.Wait)
	case errors.Is(se.Cause, transport.ErrRetryPastDeadline):
		text = fmt.Sprintf("not retried: the next wait (%v) would end past the deadline", se.Wait)
	case se.Cause != nil:
		text = "retry wait interrupted: " + se.Cause.Error()
	case se.Retryable && se.Attempts > 1:
		text = fmt.Sprintf("gave up after %d attempts", se.Attempts)
	case se.Retryable:
		text = "retryable, but retries are off"
	}
	return &briefError{se: se, text: text}
}

// KeyHint is the hint of an authentication failure: it names where the
// key came from (an environment variable, or the Config field). Other
// statuses get none.
func KeyHint(status int, source string) string {
	switch status {
	case 401:
		return "check the API key in " + source
	case 403:
		return "check that the API key in " + source + " may use this model"
	}
	return ""
}
