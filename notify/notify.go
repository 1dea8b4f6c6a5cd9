package notify

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
)

// Kinds of [Item] beside the interruption kinds (approval, reconciliation,
// recovery, provider), which keep their names.
const (
	// KindStalled is a run whose worker is gone (its claim expired or its
	// process died) while it was running.
	KindStalled = "stalled"
	// KindEscalated is a call that waited for approval past its deadline.
	KindEscalated = "approval_escalated"
)

// Schema is the version of the [Item] JSON a delivery carries.
const Schema = 1

// Item is one thing that entered the inbox: the JSON body of a delivery.
// It holds identifiers and one line of reason, never arguments or results.
type Item struct {
	// Schema is [Schema].
	Schema int `json:"schema"`
	// ID identifies the item: the same for every delivery of it, also in
	// [DeliveryHeader]. [Notifier.Notify] derives it when empty.
	ID string `json:"id"`
	// Kind is approval, reconciliation, recovery, provider, stalled or
	// approval_escalated.
	Kind string `json:"kind"`
	// RunID is the run whose ledger holds the call (a child run's, for a
	// call inside an agent used as a tool).
	RunID string `json:"run_id"`
	// CallID, Tool and Effect name the call; empty for a provider
	// interruption or a stalled run.
	CallID string `json:"call_id,omitempty"`
	Tool   string `json:"tool,omitempty"`
	Effect string `json:"effect,omitempty"`
	// Attempt is the call's attempt count when it entered the inbox; a new
	// attempt that stops again is a new item.
	Attempt int `json:"attempt,omitempty"`
	// Epoch is, for a stalled run, the claim epoch that went stale.
	Epoch int64 `json:"epoch,omitempty"`
	// Reason is one line (at most 300 bytes): why it waits.
	Reason string `json:"reason,omitempty"`
	// At is when it entered the inbox.
	At time.Time `json:"at"`
	// Link is the console page of the run, when [Config].ConsoleURL is set.
	Link string `json:"link,omitempty"`
}

// key is what deduplicates items: two items with one key are one item.
func (it *Item) key() string {
	if it.ID != "" {
		return it.ID
	}
	parts := []string{it.Kind, it.RunID, it.CallID, strconv.Itoa(it.Attempt), strconv.FormatInt(it.Epoch, 10)}
	if it.Kind == string(actoviq.InterruptProvider) || it.Kind == KindEscalated {
		// A provider interruption is a new one after every explicit resume;
		// an escalation is one per wait (At is when the wait began).
		parts = append(parts, it.At.UTC().Format(time.RFC3339Nano))
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:12])
}

// Config configures a [Notifier]. URL and Secret are required.
type Config struct {
	// URL is the webhook every item is POSTed to.
	URL string
	// Secret keys the HMAC-SHA256 signature in [SignatureHeader]; at
	// least 16 bytes.
	Secret []byte
	// ConsoleURL, when set, is the console's base URL: each item links to
	// its run's page there. Empty means no link.
	ConsoleURL string
	// Client sends the requests. Nil means a client with a 10 s timeout.
	Client *http.Client
	// MaxAttempts bounds the deliveries of one item (the first included);
	// 0 means 8. An answer of 2xx ends them; 408, 425, 429, 5xx and
	// transport errors are retried; any other status is final.
	MaxAttempts int
	// Backoff is the wait before the first retry, doubled at each retry
	// up to MaxBackoff, with up to 25% jitter; a Retry-After (seconds)
	// that is longer wins, up to MaxBackoff. Zero means 1 s; MaxBackoff
	// zero means 5 minutes.
	Backoff    time.Duration
	MaxBackoff time.Duration
	// Queue bounds the items waiting to be sent. A run never waits for the
	// notifier: when the queue is full the item is dropped, counted in
	// [Stats].Dropped and logged. Zero means 1024.
	Queue int
	// Concurrency bounds the deliveries in flight (retry waits included).
	// Zero means 4.
	Concurrency int
	// Remember bounds how many item ids are kept for deduplication (the
	// most recent). Zero means 100,000.
	Remember int
	// Clock stamps signatures; nil means time.Now.
	Clock func() time.Time
	// Logger reports dropped items and failed deliveries; nil means none.
	Logger *slog.Logger
	// OnDone, when set, is called on a delivery goroutine when an item is
	// finished: delivered (err nil) or given up (err says why), after
	// attempts requests. It is not called for items abandoned by Close.
	OnDone func(it Item, attempts int, err error)
}

func (c *Config) validate() error {
	if c.URL == "" {
		return errors.New("notify: Config.URL is empty")
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("notify: Config.URL %q is not an http(s) URL", c.URL)
	}
	if len(c.Secret) < 16 {
		return fmt.Errorf("notify: Config.Secret has %d bytes; it needs at least 16", len(c.Secret))
	}
	if c.ConsoleURL != "" {
		if u, err := url.Parse(c.ConsoleURL); err != nil || u.Scheme == "" || u.Host == "" {
			return fmt.Errorf("notify: Config.ConsoleURL %q is not an absolute URL", c.ConsoleURL)
		}
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"MaxAttempts", int64(c.MaxAttempts)}, {"Backoff", int64(c.Backoff)}, {"MaxBackoff", int64(c.MaxBackoff)},
		{"Queue", int64(c.Queue)}, {"Concurrency", int64(c.Concurrency)}, {"Remember", int64(c.Remember)}} {
		if f.v < 0 {
			return fmt.Errorf("notify: Config.%s is negative", f.name)
		}
	}
	return nil
}

// Stats counts what a [Notifier] did.
type Stats struct {
	// Queued items were accepted; Deduplicated were refused as already
	// seen; Dropped were refused because the queue was full.
	Queued, Deduplicated, Dropped int64
	// Delivered items got a 2xx; Failed gave up (final status or attempts
	// spent); Retries counts the deliveries after a first one.
	Delivered, Failed, Retries int64
}

// Notifier POSTs a signed [Item] to a webhook for everything that enters
// the inbox. It is an [actoviq.EventSink]: register it on the runtime
// ([actoviq.Config].Sinks) or on a worker ([actoviq.WorkOptions].Sinks).
// Emit only queues; delivery happens on the notifier's goroutines, so a
// slow or down webhook never slows a run. Close it to stop them.
type Notifier struct {
	cfg    Config
	queue  chan *Item
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	seen   map[string]*list.Element
	order  *list.List // oldest first
	stats  Stats
	closed bool
}

var _ actoviq.EventSink = (*Notifier)(nil)

// New starts a notifier. Close it when done.
func New(cfg *Config) (*Notifier, error) {
	if cfg == nil {
		return nil, errors.New("notify: nil Config (URL and Secret are required)")
	}
	c := *cfg
	c.Secret = append([]byte(nil), cfg.Secret...)
	if err := c.validate(); err != nil {
		return nil, err
	}
	if c.Client == nil {
		c.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 8
	}
	if c.Backoff == 0 {
		c.Backoff = time.Second
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = 5 * time.Minute
	}
	if c.Queue == 0 {
		c.Queue = 1024
	}
	if c.Concurrency == 0 {
		c.Concurrency = 4
	}
	if c.Remember == 0 {
		c.Remember = 100_000
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.ConsoleURL = strings.TrimRight(c.ConsoleURL, "/")
	ctx, cancel := context.WithCancel(context.Background())
	n := &Notifier{cfg: c, queue: make(chan *Item, c.Queue), ctx: ctx, cancel: cancel,
		seen: map[string]*list.Element{}, order: list.New()}
	for range c.Concurrency {
		n.wg.Add(1)
		go n.loop()
	}
	return n, nil
}

// Close stops the notifier: items not yet delivered are abandoned (a retry
// wait ends at once) and Close returns when its goroutines have.
func (n *Notifier) Close() error {
	n.mu.Lock()
	if !n.closed {
		n.closed = true
		close(n.queue)
	}
	n.mu.Unlock()
	n.cancel()
	n.wg.Wait()
	return nil
}

// Stats returns the counts so far.
func (n *Notifier) Stats() Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stats
}

// Notify queues one item unless an item with its id was seen before; it
// never blocks. It reports whether the item was queued. An empty ID is
// derived from kind, run, call, attempt and epoch; an empty Link from
// [Config].ConsoleURL.
func (n *Notifier) Notify(it Item) bool {
	it.Schema = Schema
	it.ID = it.key()
	if it.Link == "" && n.cfg.ConsoleURL != "" && it.RunID != "" {
		it.Link = n.cfg.ConsoleURL + "/runs/" + url.PathEscape(it.RunID)
	}
	if len(it.Reason) > 300 {
		cut := 297
		for cut > 0 && !utf8Start(it.Reason[cut]) {
			cut--
		}
		it.Reason = it.Reason[:cut] + "..."
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		n.stats.Dropped++
		return false
	}
	if _, ok := n.seen[it.ID]; ok {
		n.stats.Deduplicated++
		return false
	}
	select {
	case n.queue <- &it:
	default:
		n.stats.Dropped++
		n.cfg.Logger.Warn("notify: queue full, item dropped", "kind", it.Kind, "run", it.RunID, "call", it.CallID)
		return false // not remembered: a later sighting may be sent
	}
	n.seen[it.ID] = n.order.PushBack(it.ID)
	for n.order.Len() > n.cfg.Remember {
		old := n.order.Front()
		n.order.Remove(old)
		delete(n.seen, old.Value.(string))
	}
	n.stats.Queued++
	return true
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// Emit implements [actoviq.EventSink]: run.interrupted queues one item per
// open question; an event whose type ends in "escalated" (an approval that
// waited past its deadline) queues a [KindEscalated] item. Other events are
// ignored. Emit does not block.
func (n *Notifier) Emit(_ context.Context, ev actoviq.Event) {
	switch {
	case ev.Type == actoviq.EvRunInterrupted:
		var d struct {
			Interruptions []actoviq.Interruption `json:"interruptions"`
		}
		if json.Unmarshal(ev.Data, &d) != nil {
			return
		}
		for _, in := range d.Interruptions {
			run := ev.RunID
			if in.RunID != "" {
				run = in.RunID
			}
			n.Notify(Item{Kind: string(in.Kind), RunID: run, CallID: in.CallID, Tool: in.Tool, Effect: in.Effect,
				Attempt: in.Attempt, Reason: oneLine(in.Reason), At: ev.Time})
		}
	case strings.HasSuffix(ev.Type, "escalated"):
		// tool.approval_escalated (actoviq.ApprovalEscalatedData).
		var d struct {
			CallID       string    `json:"call_id"`
			Tool         string    `json:"tool"`
			Effect       string    `json:"effect"`
			Attempt      int       `json:"attempt"`
			WaitingSince time.Time `json:"waiting_since"`
			DecideBy     time.Time `json:"decide_by"`
			EscalateTo   []string  `json:"escalate_to"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		reason := "the call waited for approval past its deadline"
		if !d.WaitingSince.IsZero() {
			reason = "the call has waited for approval since " + d.WaitingSince.UTC().Format(time.RFC3339)
			if !d.DecideBy.IsZero() {
				reason += " (due by " + d.DecideBy.UTC().Format(time.RFC3339) + ")"
			}
		}
		if len(d.EscalateTo) > 0 {
			reason += "; escalated to " + strings.Join(d.EscalateTo, ", ")
		}
		at := d.WaitingSince
		if at.IsZero() {
			at = ev.Time
		}
		// At is the start of the wait: one escalation per wait, and a new
		// wait (an expired approval asked again) is a new item.
		n.Notify(Item{Kind: KindEscalated, RunID: ev.RunID, CallID: d.CallID, Tool: d.Tool, Effect: d.Effect,
			Attempt: d.Attempt, Reason: oneLine(reason), At: at})
	}
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return s
}

func (n *Notifier) loop() {
	defer n.wg.Done()
	for it := range n.queue {
		if n.ctx.Err() != nil {
			continue // closing: drain without sending
		}
		n.deliver(it)
	}
}

// deliver sends one item, retrying while the outcome allows it.
func (n *Notifier) deliver(it *Item) {
	body, err := json.Marshal(it)
	if err != nil {
		n.fail(it, 0, "encode: "+err.Error())
		return
	}
	wait := n.cfg.Backoff
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			n.mu.Lock()
			n.stats.Retries++
			n.mu.Unlock()
		}
		retry, after, why := n.post(it, body)
		if why == "" {
			n.mu.Lock()
			n.stats.Delivered++
			n.mu.Unlock()
			if n.cfg.OnDone != nil {
				n.cfg.OnDone(*it, attempt, nil)
			}
			return
		}
		if !retry || attempt >= n.cfg.MaxAttempts {
			n.fail(it, attempt, why)
			return
		}
		d := wait + time.Duration(rand.Int64N(int64(wait)/4+1))
		if after > d {
			d = after
		}
		d = min(d, n.cfg.MaxBackoff)
		wait = min(2*wait, n.cfg.MaxBackoff)
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-n.ctx.Done():
			t.Stop()
			return
		}
	}
}

// post makes one request. why is empty on success; otherwise retry says
// whether another attempt may succeed and after is the server's
// Retry-After.
func (n *Notifier) post(it *Item, body []byte) (retry bool, after time.Duration, why string) {
	req, err := http.NewRequestWithContext(n.ctx, http.MethodPost, n.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return false, 0, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "actoviq-notify/1")
	req.Header.Set(SignatureHeader, Sign(n.cfg.Secret, n.cfg.Clock(), body))
	req.Header.Set(DeliveryHeader, it.ID)
	resp, err := n.cfg.Client.Do(req)
	if err != nil {
		return n.ctx.Err() == nil, 0, err.Error()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return false, 0, ""
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		after = time.Duration(s) * time.Second
	}
	switch c := resp.StatusCode; {
	case c == http.StatusRequestTimeout, c == http.StatusTooEarly, c == http.StatusTooManyRequests, c >= 500:
		return true, after, resp.Status
	}
	return false, 0, resp.Status + " (final)"
}

func (n *Notifier) fail(it *Item, attempts int, why string) {
	n.mu.Lock()
	n.stats.Failed++
	n.mu.Unlock()
	n.cfg.Logger.Warn("notify: delivery failed", "kind", it.Kind, "run", it.RunID, "call", it.CallID, "id", it.ID,
		"attempts", attempts, "why", why)
	if n.cfg.OnDone != nil {
		n.cfg.OnDone(*it, attempts, fmt.Errorf("notify: %s item for run %s not delivered after %d attempts: %s", it.Kind, it.RunID, attempts, why))
	}
}

// Watch calls list every interval until ctx ends and queues what it
// returns; items seen before are deduplicated as usual. It is for what no
// event announces: a run whose worker died ([KindStalled]) is found by
// looking at the store (the command line lists stalled runs, each with the
// epoch of its stale claim, so a run that stalls again later is a new
// item). A list error is logged and the next interval tries again. Run one
// watcher per store: two would each send their own copy.
func (n *Notifier) Watch(ctx context.Context, interval time.Duration, list func(context.Context) ([]Item, error)) error {
	if interval <= 0 {
		return fmt.Errorf("notify: Watch interval %v; it must be positive", interval)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		items, err := list(ctx)
		if err != nil && ctx.Err() == nil {
			n.cfg.Logger.Warn("notify: watch could not list items", "err", err)
		}
		for _, it := range items {
			n.Notify(it)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-n.ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
