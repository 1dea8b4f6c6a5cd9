package redact

import (
	"encoding/json"
	"regexp"
	"strings"
)

// assignment finds "key = value", "key: value" and "key"/'key' quoted
// forms in free text: group 1 is the key, group 2 the value (a quoted
// string, an auth scheme followed by its credential, or a bare word).
var assignment = regexp.MustCompile(`(?i)["']?([A-Za-z0-9][A-Za-z0-9_.\-]*)["']?[ \t]*[:=][ \t]*("(?:[^"\\]|\\.)*"|"(?:[^"\\]|\\.)*$|'[^']*'|(?:bearer|basic|token|digest)[ \t]+(?:\[REDACTED\]|[^\s,;&"'<>()\[\]{}]+)|\[REDACTED\]|[^\s,;&"'<>()\[\]{}]+)`)

// bearer finds an Authorization-style credential wherever it stands.
var bearer = regexp.MustCompile(`(?i)\b(?:bearer|basic)[ \t]+([A-Za-z0-9._~+/\-]{8,}=*)`)

// Text returns s with the value of every secret-looking assignment in it
// replaced by [Placeholder]: "api_key=sk-…", "Authorization: Bearer …",
// `"client_secret": "…"`, "token: …", and any "Bearer …" credential. Use it
// for free text that may quote a secret: error messages, interruption
// reasons, evidence. Keys are matched as by [Redactor.IsSecretKey]; a
// quoted value loses its content but keeps its quotes.
func (r *Redactor) Text(s string) string {
	if s == "" {
		return s
	}
	var b strings.Builder
	pos := 0
	for pos < len(s) {
		m := assignment.FindStringSubmatchIndex(s[pos:])
		if m == nil {
			break
		}
		key, ke := s[pos+m[2]:pos+m[3]], pos+m[3]
		vs, ve := pos+m[4], pos+m[5]
		if !r.IsSecretKey(key) {
			// The value may itself hold an assignment ("failed: api_key=…").
			b.WriteString(s[pos:ke])
			pos = ke
			continue
		}
		v := s[vs:ve]
		b.WriteString(s[pos:vs])
		switch {
		case strings.HasSuffix(v, Placeholder):
			b.WriteString(v)
		case v[0] == '"' || v[0] == '\'':
			b.WriteString(v[:1] + Placeholder + v[:1])
		default:
			if sp := strings.IndexAny(v, " \t"); sp > 0 { // "Bearer xyz": keep the scheme
				b.WriteString(v[:sp+1] + Placeholder)
			} else {
				b.WriteString(Placeholder)
			}
		}
		pos = ve
	}
	b.WriteString(s[pos:])
	out := b.String()
	return bearer.ReplaceAllStringFunc(out, func(m string) string {
		sp := strings.IndexAny(m, " \t")
		if strings.TrimLeft(m[sp:], " \t") == Placeholder {
			return m
		}
		return m[:sp+1] + Placeholder
	})
}

// JSONText is [Redactor.JSON] followed by [Redactor.Text] on every string
// value, for JSON the runtime builds around free text (persisted errors,
// evidence). Key order is not kept. Input that is not valid JSON is
// treated as text and returned as a JSON string.
func (r *Redactor) JSONText(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return b
	}
	red, _, err := r.JSON(b)
	if err != nil {
		out, _ := json.Marshal(r.Text(string(b)))
		return out
	}
	var v any
	if err := json.Unmarshal(red, &v); err != nil {
		return red
	}
	changed := false
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		case string:
			if t := r.Text(x); t != x {
				changed = true
				return t
			}
		}
		return v
	}
	v = walk(v)
	if !changed {
		return red
	}
	out, err := json.Marshal(v)
	if err != nil {
		return red
	}
	return out
}
