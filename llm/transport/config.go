package transport

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/actoviq/actoviq-go/llm"
)

// Defaults used when the matching Config field is zero.
const (
	DefaultMaxRetries     = 2
	DefaultInitialBackoff = 250 * time.Millisecond
	DefaultMaxBackoff     = 30 * time.Second
	DefaultMaxEventSize   = 64 << 20 // 64 MiB
	DefaultMaxErrorBody   = 64 << 10 // 64 KiB
)

// Retries returns a pointer to n, for Config.MaxRetries.
func Retries(n int) *int { return &n }

// Options are the transport settings every provider adapter takes
// (openai.Config and anthropic.Config embed them). The zero value is
// usable: every zero field takes the default named in its comment.
type Options struct {
	// HTTPClient sends the requests. Its own Timeout, if any, bounds each
	// attempt, not the whole call; use the context for that.
	// Zero (nil) means a client like http.DefaultClient that does not follow
	// redirects (a redirect would carry the API key elsewhere).
	HTTPClient *http.Client

	// MaxRetries is how many times a failed attempt may be retried, so a
	// call makes at most MaxRetries+1 attempts. It is a pointer so that 0
	// can mean "retries off": use Retries(0).
	// Nil means DefaultMaxRetries (2, so 3 attempts). Negative is invalid.
	MaxRetries *int

	// InitialBackoff is the wait after the first failed attempt; each
	// further wait doubles, up to MaxBackoff.
	// Zero means DefaultInitialBackoff (250ms). Negative is invalid.
	InitialBackoff time.Duration

	// MaxBackoff caps the computed backoff. It is also the longest wait a
	// server may ask for with retry-after-ms or Retry-After: when a server
	// asks for more, the call fails at once instead of sleeping.
	// Zero means DefaultMaxBackoff (30s). Must not be below InitialBackoff.
	MaxBackoff time.Duration

	// Clock gives the current time, compared with the context deadline
	// and with HTTP-date Retry-After values. It has the type of
	// store.Clock, the one clock of the module. Zero (nil) means time.Now.
	Clock func() time.Time

	// Sleep waits for d between attempts, or until ctx is done, whichever
	// comes first. It returns nil after a full wait, or a non-nil error
	// (normally context.Cause(ctx)) when interrupted. Tests inject one that
	// advances their Clock instead of waiting. Zero (nil) means a timer.
	Sleep func(ctx context.Context, d time.Duration) error

	// Jitter maps a computed backoff to the wait actually used. The result
	// is clamped to [0, d]. It is not applied to a server-requested wait.
	// Zero (nil) means subtracting a random 0–25% of d.
	Jitter func(d time.Duration) time.Duration

	// OnAttempt, when set, is called synchronously after every attempt,
	// successful or not, on the calling goroutine. Its text is scrubbed of
	// secrets. Zero (nil) means no observer.
	OnAttempt func(llm.Attempt)
}

// Config configures a Client: the shared [Options] plus what only the
// transport's own callers set. The zero value is usable. New copies the
// Config; changing it afterwards has no effect on the Client.
type Config struct {
	Options

	// Redact lists secrets (API keys, tokens) that must never appear in an
	// error message or an Attempt, with the forms they leak in (the token
	// of "Bearer <token>", JSON- and URL-escaped). The values of every
	// request header with a secret name (Authorization, X-Api-Key, Cookie,
	// X-Auth-Token, ...) are always redacted as well. Zero (nil) means only
	// those header values.
	Redact []string

	// MaxEventSize bounds one SSE line and the data of one SSE event read
	// by Client.Stream. Beyond it the stream fails with
	// *EventTooLargeError. Zero means DefaultMaxEventSize (64 MiB).
	// Negative is invalid.
	MaxEventSize int

	// MaxErrorBody bounds how much of a failed response body is read into
	// StatusError.Body. Zero means DefaultMaxErrorBody (64 KiB).
	// Negative is invalid.
	MaxErrorBody int
}

// config is Config with defaults applied.
type config struct {
	hc           *http.Client
	maxRetries   int
	initial, max time.Duration
	now          func() time.Time
	sleep        func(context.Context, time.Duration) error
	jitter       func(time.Duration) time.Duration
	onAttempt    func(llm.Attempt)
	redact       []string
	maxEvent     int
	maxErrBody   int
}

func (c *Config) validate() error {
	if c.MaxRetries != nil && *c.MaxRetries < 0 {
		return fmt.Errorf("transport: Config.MaxRetries is %d, must be >= 0", *c.MaxRetries)
	}
	if c.InitialBackoff < 0 {
		return fmt.Errorf("transport: Config.InitialBackoff is %v, must be >= 0", c.InitialBackoff)
	}
	if c.MaxBackoff < 0 {
		return fmt.Errorf("transport: Config.MaxBackoff is %v, must be >= 0", c.MaxBackoff)
	}
	if c.MaxEventSize < 0 {
		return fmt.Errorf("transport: Config.MaxEventSize is %d, must be >= 0", c.MaxEventSize)
	}
	if c.MaxErrorBody < 0 {
		return fmt.Errorf("transport: Config.MaxErrorBody is %d, must be >= 0", c.MaxErrorBody)
	}
	initial, max := c.InitialBackoff, c.MaxBackoff
	if initial == 0 {
		initial = DefaultInitialBackoff
	}
	if max == 0 {
		max = DefaultMaxBackoff
	}
	if max < initial {
		return fmt.Errorf("transport: Config.MaxBackoff (%v) is below Config.InitialBackoff (%v)", max, initial)
	}
	return nil
}

func (c *Config) resolve() config {
	r := config{
		hc:         c.HTTPClient,
		maxRetries: DefaultMaxRetries,
		initial:    c.InitialBackoff,
		max:        c.MaxBackoff,
		now:        c.Clock,
		sleep:      c.Sleep,
		jitter:     c.Jitter,
		onAttempt:  c.OnAttempt,
		maxEvent:   c.MaxEventSize,
		maxErrBody: c.MaxErrorBody,
	}
	if c.MaxRetries != nil {
		r.maxRetries = *c.MaxRetries
	}
	if r.hc == nil {
		r.hc = defaultClient
	}
	if r.initial == 0 {
		r.initial = DefaultInitialBackoff
	}
	if r.max == 0 {
		r.max = DefaultMaxBackoff
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.sleep == nil {
		r.sleep = timerSleep
	}
	if r.jitter == nil {
		r.jitter = defaultJitter
	}
	if r.maxEvent == 0 {
		r.maxEvent = DefaultMaxEventSize
	}
	if r.maxErrBody == 0 {
		r.maxErrBody = DefaultMaxErrorBody
	}
	for _, s := range c.Redact {
		if s != "" {
			r.redact = append(r.redact, s)
		}
	}
	return r
}

// timerSleep is the default Options.Sleep.
func timerSleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return context.Cause(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// defaultJitter takes a random 0–25% off d, so that many clients that
// failed together do not retry together.
func defaultJitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d - time.Duration(rand.Float64()*0.25*float64(d))
}

// defaultClient does not follow redirects: a provider API has no reason to
// redirect a POST, and following one would send its credentials (x-api-key
// is not stripped by net/http on a cross-host redirect) somewhere else. A
// redirect is returned as its 3xx status, a final error.
var defaultClient = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
