package once

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// Defaults applied to zero fields of [Config].
const (
	DefaultLeaseTTL     = 30 * time.Second
	DefaultPollInterval = 50 * time.Millisecond
)

// writeTimeout bounds the store writes made after fn returned (the record,
// the release). They run on a context detached from the caller's, so that a
// cancellation cannot lose a result that exists or leave the lease held.
var writeTimeout = 10 * time.Second // a var for tests (export_test.go)

// Config configures [DoConfig]. A nil *Config means defaults. DoConfig copies
// the Config; changing it afterwards has no effect on a running call.
type Config struct {
	// Tenant scopes the key: the same key in two tenants is two unrelated
	// records. Default (""): [store.DefaultTenant].
	Tenant string

	// Holder names this call in the claim. It must differ between calls that
	// may run at the same time: two calls with the same Holder share the
	// claim and may both run fn. Default (""): the result of NewHolder, fresh
	// for every call.
	Holder string

	// NewHolder returns a fresh holder name; it is called once per call when
	// Holder is empty. Default (nil): 16 random bytes from crypto/rand,
	// hex-encoded.
	NewHolder func() string

	// LeaseTTL is how long the claim outlives a caller that stopped renewing
	// it (a crashed process): after that, another caller may run fn. While fn
	// runs the lease is renewed every LeaseTTL/3. Default (0): 30s. Negative
	// is invalid.
	LeaseTTL time.Duration

	// PollInterval is how long a caller waits before looking again when
	// another caller holds the claim. Default (0): 50ms. Negative is invalid.
	PollInterval time.Duration
}

// resolve validates c and returns a copy with the defaults applied.
func (c *Config) resolve() (Config, error) {
	var r Config
	if c != nil {
		r = *c
	}
	if err := r.validate(); err != nil {
		return Config{}, err
	}
	if r.Tenant == "" {
		r.Tenant = store.DefaultTenant
	}
	if r.LeaseTTL == 0 {
		r.LeaseTTL = DefaultLeaseTTL
	}
	if r.PollInterval == 0 {
		r.PollInterval = DefaultPollInterval
	}
	if r.Holder == "" {
		if r.NewHolder != nil {
			r.Holder = r.NewHolder()
		} else {
			r.Holder = randomHolder()
		}
		if r.Holder == "" {
			return Config{}, &store.InvalidError{Field: "Config.NewHolder", Reason: "returned an empty holder"}
		}
	}
	return r, nil
}

func (c *Config) validate() error {
	if c.LeaseTTL < 0 {
		return &store.InvalidError{Field: "Config.LeaseTTL", Reason: "negative"}
	}
	if c.PollInterval < 0 {
		return &store.InvalidError{Field: "Config.PollInterval", Reason: "negative"}
	}
	return nil
}

func randomHolder() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails since Go 1.24; it crashes instead
	return hex.EncodeToString(b[:])
}
