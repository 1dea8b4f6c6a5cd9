package httptool

import (
	"fmt"
	"time"

	"github.com/actoviq/actoviq-go/tool"
)

// NotSentError: the request never left this machine (no key, a preset
// key, a refused connection, a DNS failure, a context that ended before a
// connection). Nothing happened at the target. A tool that returns it
// gives the model an error result; a new call gets a new key.
type NotSentError struct {
	// Request is the method and URL, without query or user information.
	Request string
	// Err is the cause.
	Err error
}

func (e *NotSentError) Error() string {
	return fmt.Sprintf("%s was not sent: %v", e.Request, e.Err)
}

// Unwrap returns the cause.
func (e *NotSentError) Unwrap() error { return e.Err }

// RejectedError: the target answered a 4xx that says it did not act (bad
// arguments, not found, unauthorised, rate-limited). A tool that returns
// it gives the model an error result it can act on.
type RejectedError struct {
	// Request is the method and URL, without query or user information.
	Request string
	// Status is the HTTP status code.
	Status int
	// Body is the start of the answer's body.
	Body string
	// RetryAfter is the wait the target asked for (429, 503), if any.
	RetryAfter time.Duration
}

func (e *RejectedError) Error() string {
	msg := fmt.Sprintf("%s was rejected with %d", e.Request, e.Status)
	if e.Body != "" {
		msg += ": " + e.Body
	}
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (the target asks to wait %v)", e.RetryAfter)
	}
	return msg
}

// InProgressError: the target is still processing an earlier request with
// the same key (409, draft-07): the effect is under way or about to be,
// and its outcome is not known yet. It matches [tool.ErrOutcomeUnknown];
// a probe asked after RetryAfter may find it done.
type InProgressError struct {
	// Request is the method and URL, without query or user information.
	Request string
	// Key is the idempotency key header value sent.
	Key string
	// Status is the HTTP status code (409 unless Config.InProgress says
	// otherwise).
	Status int
	// RetryAfter is the wait before asking again: the target's
	// Retry-After, or Config.InProgressWait.
	RetryAfter time.Duration
	// Body is the start of the answer's body.
	Body string
}

func (e *InProgressError) Error() string {
	return fmt.Sprintf("%s: the target is still processing a request with key %s (%d); ask again after %v", e.Request, e.Key, e.Status, e.RetryAfter)
}

// Is matches [tool.ErrOutcomeUnknown].
func (e *InProgressError) Is(target error) bool { return target == tool.ErrOutcomeUnknown }

// KeyReusedError: the target has seen this key with a different request
// (422, draft-07). This request did nothing, but an earlier one with the
// same key may have: the call's arguments differ from what was first
// sent under its key, or two calls share a key. Only a person can say
// which, so it matches [tool.ErrOutcomeUnknown] (the call is never
// answered to the model as a failure) and [ErrKeyReused].
type KeyReusedError struct {
	// Request is the method and URL, without query or user information.
	Request string
	// Key is the idempotency key header value sent.
	Key string
	// Status is the HTTP status code.
	Status int
	// Body is the start of the answer's body.
	Body string
}

func (e *KeyReusedError) Error() string {
	msg := fmt.Sprintf("%s: the target has seen key %s with a different request (%d); a person must compare what was sent first under this key with this call", e.Request, e.Key, e.Status)
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// Is matches [tool.ErrOutcomeUnknown] and [ErrKeyReused].
func (e *KeyReusedError) Is(target error) bool {
	return target == tool.ErrOutcomeUnknown || target == ErrKeyReused
}

// UnknownOutcomeError: the request may have reached the target and the
// answer does not say what happened: a timeout or a broken connection
// after the connection was made, a 5xx, a 1xx or 3xx, or a 2xx whose body
// could not be read. It matches [tool.ErrOutcomeUnknown].
type UnknownOutcomeError struct {
	// Request is the method and URL, without query or user information.
	Request string
	// Key is the idempotency key header value sent.
	Key string
	// Status is the HTTP status code, or 0 when no answer came.
	Status int
	// Body is the start of the answer's body.
	Body string
	// Err is the transport's error, if any.
	Err error
}

func (e *UnknownOutcomeError) Error() string {
	switch {
	case e.Status == 0:
		return fmt.Sprintf("%s with key %s: no answer: %v", e.Request, e.Key, e.Err)
	case e.Err != nil:
		return fmt.Sprintf("%s with key %s: %v", e.Request, e.Key, e.Err)
	case e.Body != "":
		return fmt.Sprintf("%s with key %s: answered %d: %s", e.Request, e.Key, e.Status, e.Body)
	}
	return fmt.Sprintf("%s with key %s: answered %d", e.Request, e.Key, e.Status)
}

// Unwrap returns the transport's error.
func (e *UnknownOutcomeError) Unwrap() error { return e.Err }

// Is matches [tool.ErrOutcomeUnknown].
func (e *UnknownOutcomeError) Is(target error) bool { return target == tool.ErrOutcomeUnknown }
