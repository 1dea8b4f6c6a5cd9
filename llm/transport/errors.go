package transport

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/actoviq/actoviq-go/internal/redact"
)

// Sentinels callers may branch on with errors.Is.
var (
	// ErrRetryWaitTooLong is matched when the server asked for a wait
	// longer than Config.MaxBackoff; the call failed without sleeping.
	ErrRetryWaitTooLong = errors.New("transport: server asked for a retry wait above the cap")

	// ErrRetryPastDeadline is matched when the next wait would end after
	// the context deadline; the call failed without sleeping.
	ErrRetryPastDeadline = errors.New("transport: retry wait would end past the context deadline")

	// ErrEmptyStream is the (retryable) failure of a 2xx stream that ended
	// cleanly before its first event.
	ErrEmptyStream = errors.New("transport: stream ended before its first event")

	// ErrEventTooLarge is matched by *EventTooLargeError.
	ErrEventTooLarge = errors.New("transport: SSE event too large")
)

// StatusError is a final failure reported by the server: a non-2xx status
// that is not retried (or whose retries ran out, or whose wait was refused),
// or an SSE error event classified by Request.ErrorEvent.
//
// Its fields are diagnostics. Retryable says whether the transport's rules
// class the failure as retryable; nothing above the transport should retry
// a whole run because of it.
type StatusError struct {
	// Status is the HTTP status, or the status an error event was
	// classified as.
	Status int
	// Header is the response header (nil for an error event).
	Header http.Header
	// Body is at most Config.MaxErrorBody bytes of the response body, or
	// the data of the error event, scrubbed of secrets.
	Body []byte
	// Event is the SSE error event, nil for a status response.
	Event *SSEEvent
	// Attempts is how many requests were sent.
	Attempts int
	// Retryable reports whether the status is in the retry set (after
	// x-should-retry).
	Retryable bool
	// Wait is the wait that was asked for or computed but not slept (see
	// Cause); zero otherwise.
	Wait time.Duration
	// Cause is nil, ErrRetryWaitTooLong, ErrRetryPastDeadline, or the
	// context's error when a backoff sleep was interrupted.
	Cause error

	msg string
}

func (e *StatusError) Error() string { return e.msg }

// Unwrap returns Cause.
func (e *StatusError) Unwrap() error { return e.Cause }

// TransportError is a final failure without a usable response: the request
// could not be sent, or no response header arrived (refused or reset
// connection, DNS or TLS failure, response-header timeout), or a 2xx stream
// broke before its first event.
type TransportError struct {
	// Method and URL identify the request; URL is scrubbed of secrets.
	Method, URL string
	// Attempts is how many requests were sent.
	Attempts int
	// Err is the underlying error (net.Error, context error, …). Its own
	// text is not scrubbed; Error() is.
	Err error
	// Retryable reports whether the transport's rules class Err as retryable.
	Retryable bool
	// Wait is the wait computed but not slept (see Cause); zero otherwise.
	Wait time.Duration
	// Cause is nil, ErrRetryPastDeadline, or the context's error when a
	// backoff sleep was interrupted.
	Cause error

	msg string
}

func (e *TransportError) Error() string { return e.msg }

// Unwrap returns Err and Cause.
func (e *TransportError) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Cause}
}

// scrubbedError is an error whose text had the configured secrets removed;
// it keeps the original in its chain for errors.Is.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// EventTooLargeError reports an SSE line, or the data of one event, longer
// than Limit bytes. The decoder stops; it never buffers more than Limit.
type EventTooLargeError struct {
	// Limit is the configured bound (Config.MaxEventSize).
	Limit int
}

func (e *EventTooLargeError) Error() string {
	return fmt.Sprintf("transport: SSE line or event exceeds %d bytes", e.Limit)
}

// Is matches ErrEventTooLarge.
func (e *EventTooLargeError) Is(target error) bool { return target == ErrEventTooLarge }

// scrubber replaces the secrets of one call: Config.Redact and the values
// of the request's secret headers (every header whose name the one
// redactor, internal/redact, calls secret: Authorization, X-Api-Key,
// Cookie, ...).
type scrubber struct{ s *redact.Secrets }

// secretKeys judges header names.
var secretKeys = redact.New()

func newScrubber(base []string, h http.Header) scrubber {
	s := redact.NewSecrets(base...)
	for name, vs := range h {
		if secretKeys.IsSecretKey(name) {
			s.Add(vs...)
		}
	}
	return scrubber{s}
}

func (s scrubber) str(x string) string { return s.s.Text(x) }

func (s scrubber) bytes(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	if t := s.s.Text(string(b)); t != string(b) {
		return []byte(t)
	}
	return b
}

// excerpt shortens a body for an error message.
func excerpt(b []byte) string {
	const n = 512
	if len(b) > n {
		return strings.TrimSpace(string(b[:n])) + "…"
	}
	return strings.TrimSpace(string(b))
}
