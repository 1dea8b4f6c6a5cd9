package httptool

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/actoviq/actoviq-go/tool"
)

// Config configures a [Client]. A nil *Config means all defaults.
type Config struct {
	// HTTPClient sends the requests. The Client uses a copy that never
	// follows redirects (a 307 or 308 would send the request a second
	// time, elsewhere). Nil means a client over http.DefaultTransport.
	// The deadline is the tool call's context; a Timeout set here applies
	// too.
	HTTPClient *http.Client
	// KeyHeader is the request header that carries the call's key.
	// Empty means "Idempotency-Key" (draft-07; Stripe, Zuora). Some APIs
	// name it otherwise ("Cko-Idempotency-Key", "X-Qonto-Idempotency-Key").
	KeyHeader string
	// Key turns the call's key into the header's value. Nil means
	// [SFString], the draft's Structured Field String (the key in double
	// quotes). [BareKey] sends the key as it is, as most APIs document;
	// [UUIDKey] sends a UUID derived from it, for APIs that take only
	// UUIDs. Whatever it returns must be the same for the same key: it is
	// what the target dedupes on.
	Key func(key string) (string, error)
	// ReplayedHeader is the response header that marks an answer the
	// target replayed from its record of an earlier request with the same
	// key ("true" or "?1"). Empty means "Idempotent-Replayed" (Stripe).
	ReplayedHeader string
	// Dedupes declares that the target dedupes on the key: a request sent
	// again with the same key is answered from the target's record of the
	// first, or acted on once if the first never arrived. It is a claim
	// about the target that only its owner can make, and it changes two
	// things. The tools built with [NewTool] get a probe
	// ([tool.Reconciler]) that settles an unknown outcome by sending the
	// request again; and Go's transport may then re-send a request whose
	// keep-alive connection broke after it was written (it does so for any
	// request with an Idempotency-Key header and a rewindable body). False
	// (the default) means neither: no request is ever sent twice.
	Dedupes bool
	// KeyWindow is how long the target keeps a key after the first
	// request with it; after that, the same key acts again. The probe of a
	// deduping tool sends a call again only while the call's last attempt
	// started less than KeyWindow ago (the runtime tells it when:
	// [tool.CallStarted]); past it, or when the start is not known, it
	// leaves the call to a person. Zero means 24 hours, what Stripe and
	// Checkout.com document; set the target's own (Qonto: 30 minutes).
	KeyWindow time.Duration
	// Clock gives the time the probe compares with KeyWindow. Nil means
	// time.Now.
	Clock func() time.Time
	// InProgress reports whether a response means "a request with this
	// key is still being processed". Nil means status 409 (draft-07).
	InProgress func(status int, header http.Header, body []byte) bool
	// KeyReused reports whether a response means "this key was used
	// before with a different request". Nil means status 422 (draft-07);
	// Stripe answers 400 with an error of type "idempotency_error",
	// Whop 400: give a function that recognises the body.
	KeyReused func(status int, header http.Header, body []byte) bool
	// InProgressWait is the wait suggested after an in-progress answer
	// without Retry-After. Zero means 2 s.
	InProgressWait time.Duration
	// MaxBody bounds the bytes of an answer that are read. Zero means
	// 1 MiB; a longer answer is cut and [Response.Truncated] is set.
	MaxBody int64
}

func (c *Config) validate() error {
	switch {
	case c.InProgressWait < 0:
		return fmt.Errorf("httptool: invalid Config.InProgressWait %v: negative", c.InProgressWait)
	case c.KeyWindow < 0:
		return fmt.Errorf("httptool: invalid Config.KeyWindow %v: negative", c.KeyWindow)
	case c.MaxBody < 0:
		return fmt.Errorf("httptool: invalid Config.MaxBody %d: negative", c.MaxBody)
	case c.KeyHeader != "" && !validHeaderName(c.KeyHeader):
		return fmt.Errorf("httptool: invalid Config.KeyHeader %q", c.KeyHeader)
	case c.ReplayedHeader != "" && !validHeaderName(c.ReplayedHeader):
		return fmt.Errorf("httptool: invalid Config.ReplayedHeader %q", c.ReplayedHeader)
	}
	return nil
}

func validHeaderName(s string) bool {
	for _, r := range s {
		if r <= ' ' || r >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return s != ""
}

// Client sends a tool call's HTTP requests with the call's idempotency key
// and says what each answer means for the call's ledger entry. It is safe
// for concurrent use.
type Client struct {
	cfg  Config
	http *http.Client
	// traced is set when the transport is net/http's own, whose trace
	// reports a connection obtained: only then can "not sent" be told
	// from "sent, then failed".
	traced bool
}

// New returns a Client.
func New(cfg *Config) (*Client, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if c.KeyHeader == "" {
		c.KeyHeader = "Idempotency-Key"
	}
	if c.Key == nil {
		c.Key = SFString
	}
	if c.ReplayedHeader == "" {
		c.ReplayedHeader = "Idempotent-Replayed"
	}
	if c.InProgress == nil {
		c.InProgress = func(status int, _ http.Header, _ []byte) bool { return status == http.StatusConflict }
	}
	if c.KeyReused == nil {
		c.KeyReused = func(status int, _ http.Header, _ []byte) bool { return status == http.StatusUnprocessableEntity }
	}
	if c.InProgressWait == 0 {
		c.InProgressWait = 2 * time.Second
	}
	if c.KeyWindow == 0 {
		c.KeyWindow = 24 * time.Hour
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.MaxBody == 0 {
		c.MaxBody = 1 << 20
	}
	hc := &http.Client{}
	if c.HTTPClient != nil {
		*hc = *c.HTTPClient
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	_, std := hc.Transport.(*http.Transport)
	return &Client{cfg: c, http: hc, traced: hc.Transport == nil || std}, nil
}

// Dedupes reports whether the Client was told that its target dedupes on
// the key ([Config.Dedupes]).
func (c *Client) Dedupes() bool { return c.cfg.Dedupes }

// Response is a 2xx answer.
type Response struct {
	// Status is the HTTP status code.
	Status int
	// Header is the answer's header.
	Header http.Header
	// Body is the answer's body, at most Config.MaxBody bytes.
	Body []byte
	// Truncated is set when the body was longer than Config.MaxBody.
	Truncated bool
	// Replayed is set when the target says (Config.ReplayedHeader) that
	// this answer is its record of an earlier request with the same key,
	// not a new effect.
	Replayed bool
	// Key is the header value sent ([Config.Key] of the call's key).
	Key string
}

// Do sends req once, with the idempotency key of the tool call running on
// req's context ([tool.IdempotencyKey]) in [Config.KeyHeader], and reads
// the answer. A 2xx is a [*Response]. Anything else is an error that says
// what the call's ledger entry should record:
//
//   - [*NotSentError]: nothing left this machine (no key in the context, a
//     key already set on the request, no connection); the model may see it.
//     "No connection" is known only through net/http's own *http.Transport
//     (its trace reports the connection); any error from another
//     RoundTripper is an unknown outcome.
//   - [*RejectedError]: a 4xx the target answered without acting; the model
//     sees it and may correct its arguments.
//   - [*InProgressError]: the target is still processing a request with
//     this key (409); outcome unknown, with the wait it suggests.
//   - [*KeyReusedError]: the target has seen this key with a different
//     request (422); outcome unknown, for a person.
//   - [*UnknownOutcomeError]: a timeout, a reset or closed connection after
//     the request may have left, a 5xx, a redirect, or a 2xx whose body
//     could not be read.
//
// The last three match [tool.ErrOutcomeUnknown] with errors.Is, so a tool
// that returns them unchanged gets the ledger's outcome-unknown handling:
// a side effect is never run again without a decision or a probe. Do never
// sends req twice; with [Config.Dedupes] false it also keeps Go's
// transport from doing so.
func (c *Client) Do(req *http.Request) (*Response, error) {
	ctx := req.Context()
	where := target(req)
	key := tool.IdempotencyKey(ctx)
	if key == "" {
		return nil, &NotSentError{Request: where, Err: ErrNoKey}
	}
	value, err := c.cfg.Key(key)
	if err != nil {
		return nil, &NotSentError{Request: where, Err: fmt.Errorf("format the key %q for %s: %w", key, c.cfg.KeyHeader, err)}
	}
	// The header map may hold the name under any case (set directly, not
	// through Set); every spelling goes on the wire.
	var vs []string
	for k, v := range req.Header {
		if strings.EqualFold(k, c.cfg.KeyHeader) {
			vs = append(vs, v...)
		}
	}
	if len(vs) > 0 && (len(vs) > 1 || vs[0] != value) {
		return nil, &NotSentError{Request: where, Err: fmt.Errorf("%w: the request already carries %s %q", ErrKeyPreset, c.cfg.KeyHeader, vs[0])}
	}
	var gotConn atomic.Bool
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { gotConn.Store(true) }}
	out := req.Clone(httptrace.WithClientTrace(ctx, trace))
	for k := range out.Header {
		if strings.EqualFold(k, c.cfg.KeyHeader) {
			delete(out.Header, k)
		}
	}
	out.Header.Set(c.cfg.KeyHeader, value)
	if !c.cfg.Dedupes {
		noReplay(out, c.cfg.KeyHeader, value)
	}
	res, err := c.http.Do(out)
	if err != nil {
		if !gotConn.Load() && c.traced {
			return nil, &NotSentError{Request: where, Err: err}
		}
		return nil, &UnknownOutcomeError{Request: where, Key: value, Err: err}
	}
	defer res.Body.Close()
	body, readErr := io.ReadAll(io.LimitReader(res.Body, c.cfg.MaxBody+1))
	truncated := int64(len(body)) > c.cfg.MaxBody
	if truncated {
		body = body[:c.cfg.MaxBody]
	}
	st := res.StatusCode
	switch {
	case st >= 200 && st < 300:
		if readErr != nil {
			return nil, &UnknownOutcomeError{Request: where, Key: value, Status: st,
				Err: fmt.Errorf("the target answered %d but its body could not be read: %w", st, readErr)}
		}
		return &Response{Status: st, Header: res.Header, Body: body, Truncated: truncated, Replayed: isTrue(res.Header.Get(c.cfg.ReplayedHeader)), Key: value}, nil
	case c.cfg.InProgress(st, res.Header, body):
		wait := retryAfter(res.Header.Get("Retry-After"), time.Now)
		if wait <= 0 {
			wait = c.cfg.InProgressWait
		}
		return nil, &InProgressError{Request: where, Key: value, Status: st, RetryAfter: wait, Body: snippet(body)}
	case c.cfg.KeyReused(st, res.Header, body):
		return nil, &KeyReusedError{Request: where, Key: value, Status: st, Body: snippet(body)}
	case st >= 400 && st < 500 && readErr != nil:
		// A rejection whose body broke off: what it said (a predicate
		// may read the body, as for Stripe's 400 idempotency_error) is
		// not known.
		return nil, &UnknownOutcomeError{Request: where, Key: value, Status: st, Body: snippet(body),
			Err: fmt.Errorf("the target answered %d but its body could not be read: %w", st, readErr)}
	case st >= 400 && st < 500:
		return nil, &RejectedError{Request: where, Status: st, Body: snippet(body), RetryAfter: retryAfter(res.Header.Get("Retry-After"), time.Now)}
	default:
		return nil, &UnknownOutcomeError{Request: where, Key: value, Status: st, Body: snippet(body)}
	}
}

// noReplay makes a request that Go's transport will not send again on its
// own. The transport re-sends a request carrying an Idempotency-Key (or
// X-Idempotency-Key) header when a reused keep-alive connection breaks
// after the request was written, if it can rewind the body (GetBody) or
// there is none. A body it cannot rewind stops that; a request without a
// body gets the key header under its lowercase name, the same header on
// the wire (header names are case-insensitive) but not the one the
// transport looks for (an empty body reader instead would make Go send
// the request chunked).
//
// GET, HEAD, OPTIONS and TRACE the transport re-sends whatever their
// headers, when they have no body or a rewindable one. They get an empty
// body reader that is not http.NoBody: not rewindable, so not re-sent.
// For GET, HEAD and OPTIONS Go finds it empty before writing and sends no
// body at all.
func noReplay(r *http.Request, header, value string) {
	r.GetBody = nil
	if r.Body == nil || r.Body == http.NoBody {
		r.Header.Del(header)
		r.Header[strings.ToLower(header)] = []string{value}
		switch r.Method {
		case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
			r.Body, r.ContentLength = emptyBody{}, 0
		}
	}
}

// emptyBody is a request body with nothing in it that Go's transport
// cannot rewind.
type emptyBody struct{}

func (emptyBody) Read([]byte) (int, error) { return 0, io.EOF }
func (emptyBody) Close() error             { return nil }

// target names a request in messages: its method and URL without the
// query (which may carry credentials) or user information.
func target(r *http.Request) string {
	if r.URL == nil {
		return r.Method
	}
	u := *r.URL
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	m := r.Method
	if m == "" {
		m = http.MethodGet
	}
	return m + " " + u.String()
}

func isTrue(v string) bool {
	v = strings.TrimSpace(v)
	return strings.EqualFold(v, "true") || v == "?1"
}

// retryAfter parses a Retry-After value (seconds or an HTTP date).
func retryAfter(v string, now func() time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now()); d > 0 {
			return d
		}
	}
	return 0
}

// snippet is the start of an answer's body, for messages.
func snippet(b []byte) string {
	const max = 512
	s := strings.ToValidUTF8(string(b), "?")
	if len(s) > max {
		s = s[:max] + "…"
	}
	return strings.TrimSpace(s)
}

// ErrNoKey is wrapped by the [*NotSentError] of a request made outside a
// tool call: its context carries no idempotency key.
var ErrNoKey = errors.New("httptool: the context carries no idempotency key (send from a tool's Call, where the runtime puts it)")

// ErrKeyPreset is wrapped by the [*NotSentError] of a request that
// already carries a different idempotency key header: httptool sends the
// call's own key, never one taken from the model's arguments.
var ErrKeyPreset = errors.New("httptool: the request already sets the idempotency key header")

// ErrKeyReused is matched by a [*KeyReusedError].
var ErrKeyReused = errors.New("httptool: idempotency key reused with a different request")
