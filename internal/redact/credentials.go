package redact

import (
	"regexp"
	"strings"
)

// credentialPattern finds credential-looking text: API keys of the common
// providers, bearer tokens and key-like query parameters.
var credentialPattern = regexp.MustCompile(`(?i)(sk-[a-z0-9_\-]{6,}|bearer\s+[a-z0-9._~+/\-]+=*|((?:api[_-]?)?key|token|secret)=[^&\s"']+)`)

// Credentials replaces credential-looking substrings of s (provider API
// keys, bearer tokens, key= query parameters) with [Placeholder], keeping
// a parameter's name ("key=[REDACTED]"). Error messages built from
// provider responses or URLs go through it, because servers and HTTP
// libraries echo credentials back.
func Credentials(s string) string {
	return credentialPattern.ReplaceAllStringFunc(s, func(m string) string {
		if i := strings.IndexByte(m, '='); i > 0 && !strings.HasPrefix(strings.ToLower(m), "bearer") {
			return m[:i+1] + Placeholder
		}
		return Placeholder
	})
}
