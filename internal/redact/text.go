package redact

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"unicode/utf8"
)

// assignment finds "key = value", "key: value" and "key"/'key' quoted
// forms in free text: group 1 is the key, group 2 the value (a quoted
// string, an auth scheme followed by its credential, or a bare word).
var assignment = regexp.MustCompile(`(?i)["']?([A-Za-z0-9][A-Za-z0-9_.\-]*)["']?[ \t]*[:=][ \t]*("(?:[^"\\]|\\.)*"|"(?:[^"\\]|\\.)*$|'[^']*'|(?:bearer|basic|token|digest)[ \t]+(?:\[REDACTED\]|[^\s,;&"'<>()\[\]{}]+)|\[REDACTED\]|[^\s,;&"'<>()\[\]{}]+)`)

// flagValue finds a command-line flag and the value after it, separated by
// blanks ("--password hunter2", "-token 'a b'", "--api-key Bearer x"):
// group 1 is the flag's name without its dashes, group 2 the value (a
// quoted string, an auth scheme followed by its credential, or a word that
// does not start with a dash, which would be the next flag). The "--key=v"
// form is an assignment.
var flagValue = regexp.MustCompile(`(?i)(?:^|[\s"'])--?([A-Za-z][A-Za-z0-9_.\-]*)[ \t]+("(?:[^"\\]|\\.)*"|'[^']*'|(?:bearer|basic|token|digest)[ \t]+(?:\[REDACTED\]|[^\s,;&"'<>()\[\]{}]+)|[^\s"'\-][^\s"']*)`)

// flagName is the name of a command-line flag, without its dashes.
var flagName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.\-]*$`)

// flagNoValue are last words of a flag name whose value is not the secret
// itself (--password-stdin, --token-file PATH, --api-key-env NAME) and
// first words of a flag that says there is none (--no-password).
var flagNoValue = map[string]bool{"stdin": true, "file": true, "path": true, "env": true, "prompt": true, "dir": true}

// SecretFlag reports whether name, a command-line flag with its dashes
// ("--password", "-token"), is followed by a secret value: its name is a
// secret key and does not say the value is elsewhere ("--password-file",
// "--password-stdin", "--no-password").
func (r *Redactor) SecretFlag(name string) bool {
	key := strings.TrimLeft(name, "-")
	if len(key) == len(name) || len(name)-len(key) > 2 || !flagName.MatchString(key) || !r.IsSecretKey(key) {
		return false
	}
	ws := words(key)
	return !flagNoValue[ws[len(ws)-1]] && ws[0] != "no"
}

// hasFlag is a cheap test that s may hold a command-line flag.
func hasFlag(s string) bool {
	return strings.HasPrefix(s, "-") || strings.Contains(s, " -") || strings.Contains(s, "\t-") ||
		strings.Contains(s, "\"-") || strings.Contains(s, "'-")
}

// bearer finds an Authorization-style credential wherever it stands.
var bearer = regexp.MustCompile(`(?i)\b(?:bearer|basic)[ \t]+([A-Za-z0-9._~+/\-]{8,}=*)`)

// urlPassword finds the password of a URL's user information
// ("postgres://app:PASS@db/x", "redis://:PASS@cache"): group 1 is
// everything before it, group 2 the password.
var urlPassword = regexp.MustCompile(`(?i)(\b[a-z][a-z0-9+.\-]*://[^\s/?#@:"'<>\[\]]*):([^\s/?#@"'<>]+)@`)

// dsnPassword finds the password of a Go MySQL driver DSN
// ("app:PASS@tcp(db:3306)/x").
var dsnPassword = regexp.MustCompile(`(\b[A-Za-z0-9_.\-]+):([^\s/@"'<>]+)@(?:tcp|tcp6|unix|udp)\(`)

// pemPrivate finds a PEM private key block ("-----BEGIN RSA PRIVATE
// KEY-----", "-----BEGIN OPENSSH PRIVATE KEY-----", "-----BEGIN PGP
// PRIVATE KEY BLOCK-----"), up to its END line or, cut short, to the end
// of the text: group 1 is the BEGIN line, group 2 the body.
var pemPrivate = regexp.MustCompile(`(-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----)((?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----|$))`)

// pemEnd is the END line of a PEM block.
var pemEnd = regexp.MustCompile(`-----END [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----$`)

// mayHoldSecret is a cheap test that s has nothing [Redactor.Text]
// replaces: every pattern needs an '=' or ':', a PEM header, an
// Authorization scheme or a word starting with a dash. Most strings (ids,
// times, amounts, words) are passed over without running a regular
// expression.
func mayHoldSecret(s string) bool {
	return strings.ContainsAny(s, "=:") || strings.Contains(s, "-----BEGIN") || containsFold(s, "bearer") || containsFold(s, "basic") || hasFlag(s)
}

// containsFold reports whether s contains the lowercase ASCII word w in
// any case.
func containsFold(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		j := 0
		for ; j < len(w); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != w[j] {
				break
			}
		}
		if j == len(w) {
			return true
		}
	}
	return false
}

// replaceGroup2 replaces group 2 of every match of re in s by the
// placeholder, unless it already is one.
func replaceGroup2(re *regexp.Regexp, s string) string {
	ms := re.FindAllStringSubmatchIndex(s, -1)
	if ms == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range ms {
		if s[m[4]:m[5]] == Placeholder {
			continue
		}
		b.WriteString(s[last:m[4]])
		b.WriteString(Placeholder)
		last = m[5]
	}
	b.WriteString(s[last:])
	return b.String()
}

// Text returns s with the value of every secret-looking assignment in it
// replaced by [Placeholder]: "api_key=sk-…", "Authorization: Bearer …",
// `"client_secret": "…"`, "token: …", "password=…" inside a connection
// string; any "Bearer …" or "Basic …" credential; the password of a URL
// ("postgres://app:…@db") or of a MySQL DSN ("app:…@tcp(db)"); and the body
// of a PEM private key block. Use it for free text that may quote a
// secret: error messages, interruption reasons, evidence; [Redactor.JSON]
// applies it to every string value. Keys are matched as by
// [Redactor.IsSecretKey]; a quoted value loses its content but keeps its
// quotes. Text is idempotent: Text(Text(s)) == Text(s).
func (r *Redactor) Text(s string) string {
	return r.text(s, false)
}

// text is Text; all makes it look for assignments even when no key in s
// can be secret (the differential test compares both ways).
func (r *Redactor) text(s string, all bool) string {
	if s == "" || !mayHoldSecret(s) {
		return s
	}
	if strings.Contains(s, "-----BEGIN") {
		s = pemPrivate.ReplaceAllStringFunc(s, func(m string) string {
			sub := pemPrivate.FindStringSubmatch(m)
			body := sub[2]
			end := pemEnd.FindString(body)
			if strings.TrimSuffix(body, end) == Placeholder {
				return m
			}
			return sub[1] + Placeholder + end
		})
	}
	out := s
	if all || r.mayHaveSecretKey(s) { // else no assignment in s has a secret key
		out = r.assignments(s)
	}
	if hasFlag(out) {
		out = r.flagValues(out)
	}
	if strings.Contains(out, "@") {
		out = replaceGroup2(urlPassword, out)
		out = replaceGroup2(dsnPassword, out)
	}
	return bearer.ReplaceAllStringFunc(out, func(m string) string {
		sp := strings.IndexAny(m, " \t")
		if strings.TrimLeft(m[sp:], " \t") == Placeholder {
			return m
		}
		return m[:sp+1] + Placeholder
	})
}

// assignments hides the value of every assignment in s whose key is
// secret.
func (r *Redactor) assignments(s string) string {
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
		b.WriteString(s[pos:vs])
		b.WriteString(hideValue(s[vs:ve]))
		pos = ve
	}
	b.WriteString(s[pos:])
	return b.String()
}

// hideValue is the redacted form of an assignment's or a flag's value v: a
// quoted value keeps its quotes, a credential its scheme ("Bearer
// [REDACTED]"), and a value already redacted stays as it is.
func hideValue(v string) string {
	switch {
	case strings.HasSuffix(v, Placeholder) || v == `"`+Placeholder+`"` || v == "'"+Placeholder+"'":
		return v
	case v[0] == '"' || v[0] == '\'':
		return v[:1] + Placeholder + v[:1]
	}
	if sp := strings.IndexAny(v, " \t"); sp > 0 { // "Bearer xyz": keep the scheme
		return v[:sp+1] + Placeholder
	}
	return Placeholder
}

// flagValues hides the value after every secret command-line flag in s.
func (r *Redactor) flagValues(s string) string {
	ms := flagValue.FindAllStringSubmatchIndex(s, -1)
	if ms == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range ms {
		name := s[m[2]:m[3]]
		if m[2] > 1 && s[m[2]-2] == '-' {
			name = "--" + name
		} else {
			name = "-" + name
		}
		if !r.SecretFlag(name) {
			continue
		}
		b.WriteString(s[last:m[4]])
		b.WriteString(hideValue(s[m[4]:m[5]]))
		last = m[5]
	}
	b.WriteString(s[last:])
	return b.String()
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

// keyWords are the words of which every secret key's normalised form
// contains one (isSecretKey: suffixWord, secretWords, defaultWords; a
// Redactor's extra keys are checked besides).
var keyWords = func() []string {
	ws := append([]string{suffixWord}, defaultWords...)
	for w := range secretWords {
		ws = append(ws, w)
	}
	return ws
}()

// mayHaveSecretKey reports whether an assignment in s (the assignment
// pattern) may have a secret key. Every key the pattern finds is a run of
// ASCII letters, digits, '_', '.' and '-', and a key is secret only if its
// normalised form (letters and digits, lowercased) contains one of
// keyWords or an extra key: so when no such run of s does, no key in s is
// secret, and looking for assignments (a backtracking regexp, the largest
// cost of redacting an engine event's strings) would change nothing.
func (r *Redactor) mayHaveSecretKey(s string) bool {
	var buf [256]byte
	t := buf[:0]
	for i := 0; i < len(s); {
		c, size := rune(s[i]), 1
		if c >= utf8.RuneSelf {
			c, size = utf8.DecodeRuneInString(s[i:])
		}
		i += size
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
			t = append(t, byte(c))
		case 'A' <= c && c <= 'Z':
			t = append(t, byte(c+'a'-'A'))
		// The pattern is case-insensitive: its [A-Za-z] also matches
		// U+017F and U+212A, which normalise folds to s and k.
		case c == 'ſ':
			t = append(t, 's')
		case c == 'K':
			t = append(t, 'k')
		case c == '_' || c == '.' || c == '-':
			// inside a key, and dropped by normalise
		default:
			if len(t) > 0 && t[len(t)-1] != ' ' {
				t = append(t, ' ') // no key spans it
			}
		}
	}
	for _, w := range keyWords {
		if bytes.Contains(t, []byte(w)) {
			return true
		}
	}
	if r != nil {
		for _, w := range r.extra {
			if bytes.Contains(t, []byte(w)) {
				return true
			}
		}
	}
	return false
}
