package redact

import (
	"bytes"
	"cmp"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// minWordLen is the shortest whitespace-separated part of a secret value
// that [Secrets.Add] also takes as a secret on its own.
const minWordLen = 8

// authSchemes are the schemes of an Authorization-style value ("Bearer
// <token>") whose credential [Secrets.Add] takes as a secret whatever its
// length.
var authSchemes = map[string]bool{"bearer": true, "basic": true, "token": true, "digest": true, "bot": true, "dpop": true, "apikey": true}

// Secrets is a set of literal secret values a caller knows: an API key it
// was configured with, the values of its secret request headers, an MCP
// server's environment, a token it obtained at run time. [Secrets.Text]
// and [Secrets.JSON] replace each of them, wherever it appears, by
// [Placeholder]; that catches a secret that a server echoes inside a
// message, whatever the message looks like. Where values overlap, the
// longest wins, so no tail of a longer secret is left behind.
//
// The zero value and a nil *Secrets hold no secret. A Secrets is safe for
// concurrent use; Add may be called at any time.
type Secrets struct {
	mu   sync.RWMutex
	list []string          // longest first
	rep  *strings.Replacer // nil when list is empty
}

// NewSecrets returns a Secrets holding values, as by [Secrets.Add].
func NewSecrets(values ...string) *Secrets {
	s := &Secrets{}
	s.Add(values...)
	return s
}

// Add adds secret values. Empty values are ignored. Besides each value it
// adds the forms in which the value leaks when it is printed in part or
// encoded: the credential after an auth scheme ("Bearer <token>" also adds
// "<token>", however short), each whitespace-separated word of 8 bytes or more, and the
// value as escaped inside a JSON string and in a URL.
func (s *Secrets) Add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	add := func(v string) {
		if v != "" && !slices.Contains(s.list, v) {
			s.list = append(s.list, v)
		}
	}
	n := len(s.list)
	for _, v := range values {
		if strings.TrimSpace(v) == "" {
			continue
		}
		add(v)
		if scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " "); ok && authSchemes[strings.ToLower(scheme)] {
			add(strings.TrimSpace(cred))
		}
		for _, w := range strings.Fields(v) {
			if len(w) >= minWordLen {
				add(w)
			}
		}
		if b, err := json.Marshal(v); err == nil {
			add(string(b[1 : len(b)-1]))
		}
		add(url.QueryEscape(v))
		add(url.PathEscape(v))
	}
	if len(s.list) == n {
		return
	}
	// strings.Replacer tries its old strings in argument order at each
	// position, so longest first gives the longest match.
	slices.SortStableFunc(s.list, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	pairs := make([]string, 0, 2*len(s.list))
	for _, v := range s.list {
		pairs = append(pairs, v, Placeholder)
	}
	s.rep = strings.NewReplacer(pairs...)
}

// replacer is the current replacer, nil when there is no secret.
func (s *Secrets) replacer() *strings.Replacer {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rep
}

// Text returns t with every secret replaced by [Placeholder].
func (s *Secrets) Text(t string) string {
	rep := s.replacer()
	if rep == nil || t == "" {
		return t
	}
	return rep.Replace(t)
}

// JSON returns raw with every secret replaced by [Placeholder] in its
// strings, keys included. The result stays valid JSON: a document that
// holds a secret is decoded and encoded again (numbers keep their text;
// object keys come out sorted). raw is returned unchanged when it holds no
// secret or is not valid JSON.
func (s *Secrets) JSON(raw json.RawMessage) json.RawMessage {
	rep := s.replacer()
	if rep == nil || len(raw) == 0 || rep.Replace(string(raw)) == string(raw) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return raw
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return rep.Replace(x)
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[rep.Replace(k)] = walk(e)
			}
			return out
		}
		return v
	}
	b, err := json.Marshal(walk(v))
	if err != nil {
		return raw
	}
	return b
}

// KeyValues returns the values under key (an environment variable, a
// header, a query parameter) that are worth holding as secrets: every
// value when the key is secret ([Redactor.IsSecretKey] of the default
// Redactor), otherwise only values long enough to be a credential and not
// a number or boolean (DEBUG=1 or PORT=8080 would otherwise be cut out of
// every text the secrets are applied to).
func KeyValues(key string, values ...string) []string {
	secretKey := (*Redactor)(nil).IsSecretKey(key)
	var out []string
	for _, v := range values {
		if secretKey || (len(v) >= minWordLen && !isPlainLiteral(v)) {
			out = append(out, v)
		}
	}
	return out
}

// isPlainLiteral reports a JSON number or boolean.
func isPlainLiteral(v string) bool {
	if v == "true" || v == "false" {
		return true
	}
	var f float64
	return json.Unmarshal([]byte(v), &f) == nil
}

// URLValues returns the secrets a URL carries: the password of its user
// information and its query values, as by [KeyValues].
func URLValues(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var out []string
	if p, ok := u.User.Password(); ok {
		out = append(out, p)
	}
	for k, vs := range u.Query() {
		out = append(out, KeyValues(k, vs...)...)
	}
	return out
}
