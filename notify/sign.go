package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Header names of a delivery.
const (
	// SignatureHeader carries "t=<unix seconds>,v1=<hex HMAC-SHA256>": the
	// MAC, keyed with [Config].Secret, of the timestamp, a dot and the body
	// exactly as sent.
	SignatureHeader = "X-Actoviq-Signature"
	// DeliveryHeader carries the item's [Payload].ID: the same on every
	// retry of one item, so a receiver can drop a repeat.
	DeliveryHeader = "X-Actoviq-Delivery"
)

// ErrSignature is matched (errors.Is) by every refusal of [Verify].
var ErrSignature = errors.New("notify: bad signature")

// Sign returns the SignatureHeader value for body sent at t.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + mac(secret, ts, body)
}

func mac(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Verify checks a SignatureHeader value against body, as a receiver does:
// the MAC must match (compared in constant time) and the timestamp must lie
// within tolerance of now, so that a captured delivery cannot be replayed
// later. A zero tolerance means 5 minutes. Every refusal matches
// [ErrSignature] and says what was wrong.
func Verify(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = 5 * time.Minute
	}
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	if ts == "" || len(sigs) == 0 {
		return fmt.Errorf("%w: header %q has no t= and v1= parts", ErrSignature, header)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: timestamp %q: %v", ErrSignature, ts, err)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: timestamp %s is %v away from now (tolerance %v)", ErrSignature, ts, d.Round(time.Second), tolerance)
	}
	want := mac(secret, ts, body)
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return fmt.Errorf("%w: no v1 signature matches the body", ErrSignature)
}
