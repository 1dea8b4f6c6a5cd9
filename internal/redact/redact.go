package redact

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
)

// Placeholder replaces every redacted value.
const Placeholder = "[REDACTED]"

// defaultWords are matched as substrings of the normalised key.
var defaultWords = []string{
	"authorization",
	"apikey",
	"secret",
	"password",
	"passwd",
	"passphrase",
	"pwd",
	"cookie",
	"privatekey",
	"privkey",
	"credential",
	// Session identifiers are bearer credentials: session_id, JSESSIONID,
	// PHPSESSID, session_key cookies.
	"sessionid",
	"sessid",
	"sessionkey",
	// A wallet's recovery words are its private key: mnemonic,
	// seed_phrase, recoveryPhrase, BIP39_SEED_WORDS.
	"mnemonic",
	"seedphrase",
	"seedwords",
	"recoveryphrase",
}

// suffixWord is matched only at the end of the normalised key; see the
// package documentation for why.
const suffixWord = "token"

// secretWords are short words that are secret only as a whole word of the
// key ("pin", "card_pin", "pinCode"), since as substrings they are inside
// harmless words (shipping, mapping, bypass, compass, motp).
var secretWords = map[string]bool{"pin": true, "pass": true, "otp": true, "cvv": true, "cvc": true, "cvv2": true}

// Redactor replaces secret values. The zero value and a nil *Redactor use
// the default keys only. A Redactor is immutable and safe for concurrent
// use.
type Redactor struct {
	extra []string // normalised extra keys, matched as substrings
	// known memoises IsSecretKey: the same few keys (call_id, tool,
	// state, ...) come back in every event. At most maxKnown keys are
	// kept, so keys chosen by a model or a tool cannot grow it forever.
	known  sync.Map // string -> bool
	nKnown atomic.Int64
}

const maxKnown = 4096

// New returns a Redactor for the default keys plus extraKeys. Extra keys
// are normalised like the keys they are matched against and matched as
// substrings; an extra key with no letter or digit is ignored, since it
// would match every key.
func New(extraKeys ...string) *Redactor {
	r := &Redactor{}
	for _, k := range extraKeys {
		if n := normalise(k); n != "" && !slices.Contains(r.extra, n) {
			r.extra = append(r.extra, n)
		}
	}
	return r
}

// normalise lowercases k and keeps only its letters and digits.
func normalise(k string) string {
	return strings.Map(func(c rune) rune {
		if unicode.IsLetter(c) || unicode.IsDigit(c) {
			// Lower of upper folds the letters encoding/json's
			// case-insensitive key matching folds too (ſ → s, K → k).
			return unicode.ToLower(unicode.ToUpper(c))
		}
		return -1
	}, k)
}

// IsSecretKey reports whether values under key k are redacted.
func (r *Redactor) IsSecretKey(k string) bool {
	if r == nil {
		return r.isSecretKey(k)
	}
	if v, ok := r.known.Load(k); ok {
		return v.(bool)
	}
	secret := r.isSecretKey(k)
	if r.nKnown.Load() < maxKnown {
		if _, loaded := r.known.LoadOrStore(k, secret); !loaded {
			r.nKnown.Add(1)
		}
	}
	return secret
}

func (r *Redactor) isSecretKey(k string) bool {
	n := normalise(k)
	if n == "" {
		return false
	}
	if strings.HasSuffix(n, suffixWord) || tokenWord(k) {
		return true
	}
	for _, w := range words(k) {
		if secretWords[w] {
			return true
		}
	}
	for _, w := range defaultWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	if r != nil {
		for _, w := range r.extra {
			if strings.Contains(n, w) {
				return true
			}
		}
	}
	return false
}

// Map returns a copy of m (headers, environment) in which the value of
// every secret key is [Placeholder]. A nil map gives nil.
func (r *Redactor) Map(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if r.IsSecretKey(k) {
			v = Placeholder
		}
		out[k] = v
	}
	return out
}

// String replaces every occurrence of each of secrets in s with
// [Placeholder]. Use it for text that may quote a value the caller knows is
// secret, such as a configured API key echoed in an error message. Empty
// secrets are ignored. Where secrets overlap, the longest one that matches
// at a position wins, so no tail of a longer secret is left behind.
func (r *Redactor) String(s string, secrets ...string) string { return Values(s, secrets...) }

// Values is [Redactor.String] for a caller without a Redactor: every
// occurrence of each of secrets in s becomes [Placeholder], longest first.
func Values(s string, secrets ...string) string {
	ss := make([]string, 0, len(secrets))
	for _, sec := range secrets {
		if sec != "" && !slices.Contains(ss, sec) {
			ss = append(ss, sec)
		}
	}
	if len(ss) == 0 || s == "" {
		return s
	}
	// strings.Replacer tries old strings in argument order at each
	// position, so longest first gives longest match.
	slices.SortStableFunc(ss, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	pairs := make([]string, 0, 2*len(ss))
	for _, sec := range ss {
		pairs = append(pairs, sec, Placeholder)
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

// usageWords are the words that, next to "token" or "tokens", make a key
// a usage counter or token metadata rather than a secret: max_tokens,
// input_tokens, token_count, token_type, token_url.
var usageWords = map[string]bool{
	"max": true, "min": true, "input": true, "output": true, "total": true, "prompt": true, "completion": true,
	"completions": true, "count": true, "counts": true, "used": true, "usage": true, "type": true, "limit": true,
	"limits": true, "budget": true, "cached": true, "cache": true, "reasoning": true, "remaining": true, "num": true,
	"number": true, "estimated": true, "per": true, "minute": true, "second": true, "rate": true, "thinking": true,
	"thoughts": true, "candidates": true, "billed": true, "context": true, "window": true, "length": true, "len": true,
	"size": true, "details": true, "creation": true, "read": true, "write": true, "audio": true, "text": true,
	"image": true, "accepted": true, "rejected": true, "prediction": true, "generated": true, "left": true,
	"available": true, "consumed": true, "spent": true, "cost": true, "price": true, "url": true, "uri": true,
	"endpoint": true, "expiry": true, "expires": true, "expiration": true, "ttl": true, "kind": true, "format": true,
	"n": true,
}

// tokenWord reports whether k has the word token or tokens next to at
// least one other word, none of which is a usage word: auth_tokens,
// tokenValue, access_tokens, session-tokens. "tokens" alone, and
// max_tokens or token_type, are not secret.
func tokenWord(k string) bool {
	ws := words(k)
	if len(ws) < 2 {
		return false
	}
	found := false
	for _, w := range ws {
		switch {
		case w == "token" || w == "tokens":
			found = true
		case usageWords[w]:
			return false
		}
	}
	return found
}

// words splits a key into lowercase words at every character that is not
// a letter or digit and at camel-case boundaries: "tokenValue" → token,
// value; "X-API-Key" → x, api, key; "APIKeys" → api, keys.
func words(k string) []string {
	rs := []rune(k)
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.Map(func(c rune) rune { return unicode.ToLower(unicode.ToUpper(c)) }, string(cur)))
			cur = cur[:0]
		}
	}
	for i, c := range rs {
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			flush()
			continue
		}
		if unicode.IsUpper(c) && len(cur) > 0 {
			prev := cur[len(cur)-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, c)
	}
	flush()
	return out
}
