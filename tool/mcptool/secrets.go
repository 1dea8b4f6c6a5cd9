package mcptool

import (
	"errors"

	"github.com/actoviq/actoviq-go/internal/redact"
)

// scrubber holds a server's secret values (env and header values, the
// URL's password and query values, OAuth tokens learnt later) and replaces
// them wherever they appear. It is the one redactor's literal form,
// [redact.Secrets]: it works on literal text, so it also catches a secret
// that a server or the SDK echoes inside a message.
type scrubber = redact.Secrets

// scrubbedError carries a scrubbed message. errors.Is still matches what
// the original error matched (tool.ErrOutcomeUnknown, the SDK's and the
// context package's sentinels), but it has no Unwrap: errors.As cannot
// reach an inner error whose text (a URL with a token in its query, a
// server's message) was not scrubbed.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string        { return e.msg }
func (e *scrubbedError) Is(target error) bool { return errors.Is(e.err, target) }

// scrubError scrubs an error's text with s. nil stays nil.
func scrubError(s *scrubber, err error) error {
	if err == nil {
		return nil
	}
	return &scrubbedError{msg: s.Text(err.Error()), err: err}
}
