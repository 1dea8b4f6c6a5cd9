package transport

import (
	"crypto/tls"
	"errors"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// retryableStatus is the status rule of docs/design.md#model-calls, before x-should-retry.
func retryableStatus(code int) bool {
	switch {
	case code == http.StatusRequestTimeout, // 408
		code == http.StatusConflict,        // 409
		code == http.StatusTooEarly,        // 425
		code == http.StatusTooManyRequests: // 429
		return true
	case code >= 500 && code <= 599:
		return true
	}
	return false
}

// shouldRetryStatus applies the x-should-retry override to the status rule.
// h may be nil.
func shouldRetryStatus(code int, h http.Header) bool {
	switch strings.ToLower(strings.TrimSpace(h.Get("X-Should-Retry"))) {
	case "true":
		return true
	case "false":
		return false
	}
	return retryableStatus(code)
}

// retryableTransportErr reports whether an error from http.Client.Do
// (with the context still live) is worth another attempt. Everything is,
// except failures that will not change on their own: a certificate that
// does not verify, and a host name that does not exist.
func retryableTransportErr(err error) bool {
	var cert *tls.CertificateVerificationError
	if errors.As(err, &cert) {
		return false
	}
	var dns *net.DNSError
	if errors.As(err, &dns) && dns.IsNotFound && !dns.IsTemporary {
		return false
	}
	return true
}

// serverWait reads retry-after-ms, then Retry-After. ok is false when
// neither header holds a usable value; invalid, negative, NaN and past
// values are ignored. A value too large for a Duration saturates.
func serverWait(h http.Header, now time.Time) (d time.Duration, ok bool) {
	if h == nil {
		return 0, false
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && validFloat(ms) {
			return fromFloat(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if validFloat(s) {
			return fromFloat(s * float64(time.Second)), true
		}
		return 0, false
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d >= 0 {
			return d, true
		}
	}
	return 0, false
}

func validFloat(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) && f >= 0 }

func fromFloat(ns float64) time.Duration {
	if ns >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(ns)
}

// backoff is the computed wait after failed attempt n (1-based), before
// jitter: initial·2^(n-1), capped at max.
func backoff(n int, initial, max time.Duration) time.Duration {
	d := initial
	for i := 1; i < n; i++ {
		if d >= max/2 {
			return max
		}
		d *= 2
	}
	return min(d, max)
}
