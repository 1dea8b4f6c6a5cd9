package httptool

import (
	"crypto/sha256"
	"fmt"
	"strings"
)

// SFString is the default [Config.Key]: the key as a Structured Field
// String (RFC 8941), which is what draft-ietf-httpapi-idempotency-key-header-07
// defines the header's value to be: in double quotes, with '"' and '\'
// escaped. A key with a byte outside printable ASCII cannot be one; use
// [UUIDKey] for it.
func SFString(key string) (string, error) {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c < 0x20 || c > 0x7e {
			return "", fmt.Errorf("byte %#x at %d is not printable ASCII, which a Structured Field String cannot carry (Config.Key: httptool.UUIDKey)", c, i)
		}
		if c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	b.WriteByte('"')
	return b.String(), nil
}

// BareKey sends the key as it is, unquoted: what Stripe, Zuora,
// Checkout.com and most APIs document (they treat the header value as an
// opaque string). It refuses control characters and non-ASCII bytes,
// which a header value cannot carry safely.
func BareKey(key string) (string, error) {
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return "", fmt.Errorf("byte %#x at %d is not printable ASCII (Config.Key: httptool.UUIDKey)", c, i)
		}
	}
	return key, nil
}

// UUIDKey sends a UUID derived from the key (SHA-256, formatted as a
// version 8 UUID, RFC 9562): the same key always gives the same UUID, two
// keys practically never share one. For APIs that accept only UUIDs as
// idempotency keys. The ledger records the call's own key; a person
// looking for the call at the target computes UUIDKey of it.
func UUIDKey(key string) (string, error) {
	s := sha256.Sum256([]byte("actoviq idempotency key\x00" + key))
	s[6] = s[6]&0x0f | 0x80 // version 8
	s[8] = s[8]&0x3f | 0x80 // RFC 9562 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16]), nil
}
