package mcptool

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/actoviq/actoviq-go/internal/redact"
)

// redacted replaces every secret value this package scrubs.
const redacted = redact.Placeholder

// minWordLen is the shortest whitespace-separated part of a secret that is
// scrubbed on its own ("Bearer abc…" is scrubbed whole and as "abc…").
const minWordLen = 8

// scrubber replaces a server's secret values (env and header values, the
// URL's password and query values) wherever they appear. It works on
// literal text, so it also catches a secret that a server or the SDK
// echoes inside a message.
type scrubber struct {
	mu      sync.RWMutex
	secrets []string // longest first, so a secret's parts never split it
}

func newScrubber(values ...string) *scrubber {
	s := &scrubber{}
	s.add(values...)
	return s
}

// add adds secrets learnt later (OAuth tokens, a dynamically registered
// client's secret).
func (s *scrubber) add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	add := func(v string) {
		if v != "" && !slices.Contains(s.secrets, v) {
			s.secrets = append(s.secrets, v)
		}
	}
	for _, v := range values {
		if v == "" {
			continue
		}
		add(v)
		// A secret written with a scheme ("Bearer <token>") also leaks
		// when only its token is printed.
		for _, w := range strings.Fields(v) {
			if len(w) >= minWordLen {
				add(w)
			}
		}
		// JSON-escaped and URL-escaped forms, as they appear in encoded
		// payloads and URLs.
		if b, err := json.Marshal(v); err == nil {
			add(string(b[1 : len(b)-1]))
		}
		add(url.QueryEscape(v))
		add(url.PathEscape(v))
	}
	slices.SortFunc(s.secrets, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
}

// secretKeyWords mark an env, header or query key whose value is secret
// whatever it looks like.
var secretKeyWords = []string{"key", "token", "secret", "pass", "auth", "cookie", "credential", "session", "signature"}

// secretValues returns the values of key worth scrubbing. Under a
// secret-looking key every value is; otherwise only values long enough to
// be a credential (short values, numbers and booleans such as DEBUG=1 would
// otherwise be cut out of every result the model sees).
func secretValues(key string, values ...string) []string {
	lk := strings.ToLower(key)
	secretKey := slices.ContainsFunc(secretKeyWords, func(w string) bool { return strings.Contains(lk, w) })
	var out []string
	for _, v := range values {
		if secretKey || (len(v) >= minWordLen && !isPlainLiteral(v)) {
			out = append(out, v)
		}
	}
	return out
}

// isPlainLiteral reports a number or boolean.
func isPlainLiteral(v string) bool {
	if v == "true" || v == "false" {
		return true
	}
	var f float64
	return json.Unmarshal([]byte(v), &f) == nil
}

// urlSecrets returns the password and the query values of a URL.
func urlSecrets(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var out []string
	if p, ok := u.User.Password(); ok {
		out = append(out, p)
	}
	for k, vs := range u.Query() {
		out = append(out, secretValues(k, vs...)...)
	}
	return out
}

// text scrubs a string.
func (s *scrubber) text(t string) string {
	if s == nil {
		return t
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, v := range s.secrets {
		if strings.Contains(t, v) {
			t = strings.ReplaceAll(t, v, redacted)
		}
	}
	return t
}

// json scrubs the strings (keys and values) of a JSON document and returns
// it re-encoded; it stays valid JSON.
func (s *scrubber) json(raw json.RawMessage) json.RawMessage {
	if s == nil || len(raw) == 0 {
		return raw
	}
	s.mu.RLock()
	none := len(s.secrets) == 0
	s.mu.RUnlock()
	if none {
		return raw
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return raw
	}
	b, err := json.Marshal(s.walk(v))
	if err != nil {
		return raw
	}
	return b
}

func (s *scrubber) walk(v any) any {
	switch x := v.(type) {
	case string:
		return s.text(x)
	case []any:
		for i := range x {
			x[i] = s.walk(x[i])
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[s.text(k)] = s.walk(e)
		}
		return out
	}
	return v
}

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

// error scrubs an error's text. nil stays nil.
func (s *scrubber) error(err error) error {
	if err == nil {
		return nil
	}
	return &scrubbedError{msg: s.text(err.Error()), err: err}
}
