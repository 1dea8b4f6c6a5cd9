package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/actoviq/actoviq-go/llm"
)

// Header names the transport sets on every attempt.
const (
	// HeaderRetryCount carries how many retries preceded this attempt:
	// "0" on the first attempt, "1" on the second, and so on.
	HeaderRetryCount = "X-Actoviq-Retry-Count"
	// HeaderIdempotencyKey carries Request.IdempotencyKey, unchanged on
	// every attempt.
	HeaderIdempotencyKey = "Idempotency-Key"
)

// Request is one logical call. It is read, never modified, by the Client,
// and may be reused. Body is replayed verbatim on every attempt.
type Request struct {
	// Method is the HTTP method; empty means POST.
	Method string
	// URL is the absolute request URL.
	URL string
	// Header is copied onto every attempt. Authorization, X-Api-Key and
	// similar values are redacted from errors and Attempts.
	Header http.Header
	// Body is sent on every attempt; nil means no body.
	Body []byte
	// IdempotencyKey, when not empty, is sent as the Idempotency-Key
	// header, identical on every attempt, so that a server that dedupes
	// on it can recognise a retry.
	IdempotencyKey string

	// ErrorEvent is used by Client.Stream only. When set, it is asked
	// about every event; isError true means the event reports a failure
	// that should be treated like HTTP status (for example Anthropic's
	// "error" event with overloaded_error → 529, or an OpenAI payload with
	// an "error" key → its status). Before the first event is delivered
	// such an event is retried under the status rule; after, it ends the
	// stream with a *StatusError.
	ErrorEvent func(SSEEvent) (status int, isError bool)

	// ErrorEventFinal, when set, is asked about each event ErrorEvent
	// reported; true makes it final whatever its status, as an
	// x-should-retry: false header would (OpenAI's insufficient_quota is a
	// 429 that no retry can fix). Nil means the status rule alone.
	ErrorEventFinal func(SSEEvent) bool
}

// Client is the retrying HTTP client every provider adapter uses. It is
// safe for concurrent use.
type Client struct {
	cfg config
}

// New returns a Client. cfg may be nil for defaults; it is copied.
func New(cfg *Config) (*Client, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	c := *cfg
	c.Redact = append([]string(nil), cfg.Redact...)
	if cfg.MaxRetries != nil {
		n := *cfg.MaxRetries
		c.MaxRetries = &n
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return &Client{cfg: c.resolve()}, nil
}

// Do sends req, retrying under the rules of the package documentation.
//
// On success (a 2xx status) it returns the open response; the caller reads
// and closes its Body. Any other outcome is a nil response and an error:
// *StatusError for a final status of 300 or more (a redirect is not
// followed; the body already read, bounded, and closed), *TransportError when
// no response arrived. Both match the context's error with errors.Is when
// the call was cancelled.
func (c *Client) Do(ctx context.Context, req *Request) (*http.Response, error) {
	var out *http.Response
	err := c.run(ctx, req, func(_ int, resp *http.Response) *failure {
		out = resp
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// failure is one failed attempt, before it becomes a public error.
type failure struct {
	status    int         // 0: no response
	header    http.Header // response header, if any
	body      []byte      // scrubbed excerpt or event data
	event     *SSEEvent   // error event, if any
	err       error       // transport or stream error when status == 0
	retryable bool
}

// call carries what one run knows for building errors and events.
type call struct {
	method, url string // url scrubbed
	scrub       scrubber
}

// run performs attempts until one succeeds, one fails finally, or the
// context ends. accept is given each response with a 2xx status that
// is not retried; it owns the body, and returns nil to finish the call or
// a failure (having closed the body) to treat the attempt as failed.
func (c *Client) run(ctx context.Context, req *Request, accept func(n int, resp *http.Response) *failure) error {
	method := req.Method
	if method == "" {
		method = http.MethodPost
	}
	cl := call{method: method, scrub: newScrubber(c.cfg.redact, req.Header)}
	cl.url = cl.scrub.str(req.URL)
	if u, err := url.Parse(req.URL); err == nil {
		cl.url = cl.scrub.str(u.Redacted())
	}
	max := c.cfg.maxRetries + 1
	for n := 1; ; n++ {
		f, status, err := c.attempt(ctx, req, cl, n, accept)
		if err != nil { // cancelled mid-attempt or a request that cannot be built
			c.report(cl, n, 0, err.Error(), false, 0)
			return err
		}
		if f == nil {
			c.report(cl, n, status, "", false, 0)
			return nil
		}
		errText := c.failureText(cl, f, n)
		if !f.retryable || n >= max {
			c.report(cl, n, f.status, errText, false, 0)
			return c.final(cl, f, n, 0, nil)
		}
		wait := c.cfg.jitter(backoff(n, c.cfg.initial, c.cfg.max))
		wait = min(max64(wait, 0), c.cfg.max)
		if asked, ok := serverWait(f.header, c.cfg.now()); ok {
			if asked > c.cfg.max {
				c.report(cl, n, f.status, errText, false, 0)
				return c.final(cl, f, n, asked, ErrRetryWaitTooLong)
			}
			wait = max64(wait, asked)
		}
		if dl, ok := ctx.Deadline(); ok && c.cfg.now().Add(wait).After(dl) {
			c.report(cl, n, f.status, errText, false, 0)
			return c.final(cl, f, n, wait, ErrRetryPastDeadline)
		}
		c.report(cl, n, f.status, errText, true, wait)
		if err := c.cfg.sleep(ctx, wait); err != nil {
			if ctx.Err() != nil {
				err = context.Cause(ctx)
			}
			return c.final(cl, f, n, 0, err)
		}
	}
}

func max64(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}

// attempt sends attempt n. It returns a nil failure and nil error with the
// HTTP status on success, a failure for a classified failed attempt, or an
// error that ends the call at once.
func (c *Client) attempt(ctx context.Context, req *Request, cl call, n int, accept func(n int, resp *http.Response) *failure) (*failure, int, error) {
	var body io.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body)
	}
	hr, err := http.NewRequestWithContext(ctx, cl.method, req.URL, body)
	if err != nil {
		return nil, 0, &TransportError{Method: cl.method, URL: cl.url, Attempts: n - 1, Err: err,
			msg: cl.scrub.str(fmt.Sprintf("transport: build %s request: %v", cl.method, err))}
	}
	for k, vs := range req.Header {
		hr.Header[k] = append([]string(nil), vs...)
	}
	if req.IdempotencyKey != "" {
		hr.Header.Set(HeaderIdempotencyKey, req.IdempotencyKey)
	}
	hr.Header.Set(HeaderRetryCount, strconv.Itoa(n-1))
	// net/http replays a request on a reused connection by itself when it
	// can rebuild the body and the request looks idempotent (it carries an
	// Idempotency-Key). That replay would be uncounted and invisible, and
	// would break MaxRetries; without GetBody it cannot happen, and this
	// loop alone decides.
	hr.GetBody = nil

	resp, err := c.cfg.hc.Do(hr)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // drop the URL: it may hold a secret; we add a scrubbed one
		}
		if ctx.Err() != nil {
			return nil, 0, &TransportError{Method: cl.method, URL: cl.url, Attempts: n, Err: err, Cause: context.Cause(ctx),
				msg: cl.scrub.str(fmt.Sprintf("transport: %s %s: attempt %d: %v", cl.method, cl.url, n, err))}
		}
		return &failure{err: err, retryable: retryableTransportErr(err)}, 0, nil
	}
	// A success is never retried, whatever x-should-retry says: the work
	// is done and its answer is in hand.
	if resp.StatusCode < 300 {
		return accept(n, resp), resp.StatusCode, nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, int64(c.cfg.maxErrBody)))
	resp.Body.Close()
	return &failure{
		status:    resp.StatusCode,
		header:    resp.Header,
		body:      cl.scrub.bytes(b),
		retryable: shouldRetryStatus(resp.StatusCode, resp.Header),
	}, resp.StatusCode, nil
}

func (c *Client) failureText(cl call, f *failure, n int) string {
	switch {
	case f.event != nil:
		return cl.scrub.str(fmt.Sprintf("transport: %s %s: attempt %d: error event %q classified as status %d: %s",
			cl.method, cl.url, n, f.event.Type, f.status, excerpt(f.body)))
	case f.status != 0:
		return cl.scrub.str(fmt.Sprintf("transport: %s %s: attempt %d: status %d: %s",
			cl.method, cl.url, n, f.status, excerpt(f.body)))
	default:
		return cl.scrub.str(fmt.Sprintf("transport: %s %s: attempt %d: %v", cl.method, cl.url, n, f.err))
	}
}

// final turns the last failure into the public error.
func (c *Client) final(cl call, f *failure, n int, wait time.Duration, cause error) error {
	msg := c.failureText(cl, f, n)
	switch {
	case errors.Is(cause, ErrRetryWaitTooLong):
		msg += fmt.Sprintf(" (server asked to wait %v, above the %v cap)", wait, c.cfg.max)
	case errors.Is(cause, ErrRetryPastDeadline):
		msg += fmt.Sprintf(" (next wait %v would end past the context deadline)", wait)
	case cause != nil:
		msg += cl.scrub.str(fmt.Sprintf(" (retry wait interrupted: %v)", cause))
	case f.retryable && n == 1:
		msg += " (retryable, but retries are off)"
	case f.retryable:
		msg += fmt.Sprintf(" (gave up after %d attempts)", n)
	}
	if f.status == 0 {
		return &TransportError{Method: cl.method, URL: cl.url, Attempts: n, Err: f.err,
			Retryable: f.retryable, Wait: wait, Cause: cause, msg: msg}
	}
	return &StatusError{Status: f.status, Header: f.header, Body: f.body, Event: f.event,
		Attempts: n, Retryable: f.retryable, Wait: wait, Cause: cause, msg: msg}
}

func (c *Client) report(cl call, n, status int, errText string, retry bool, wait time.Duration) {
	if c.cfg.onAttempt == nil {
		return
	}
	c.cfg.onAttempt(llm.Attempt{Number: n, Method: cl.method, URL: cl.url, Status: status, Err: cl.scrub.str(errText), Retry: retry, Wait: wait})
}
