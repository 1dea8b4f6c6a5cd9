package actoviq

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/actoviq/actoviq-go/approvals"
	"github.com/actoviq/actoviq-go/internal/redact"
	"github.com/actoviq/actoviq-go/store"
)

// Holder returns the runtime's holder name ([Config.Holder] or the
// default); each drive's claim adds "/<drive>" to it.
func (rt *Runtime) Holder() string { return rt.holder }

// Runtime runs agents over a store. It is safe for concurrent use by
// many goroutines; several runtimes, in one process or many, may share one
// store: claims keep two drives of one run apart.
type Runtime struct {
	store    store.Store
	tenant   string
	holder   string
	instance string // random per runtime: see driveHolder
	ttl      time.Duration
	clock    func() time.Time
	// wallClock is set when clock is time.Now (Config.Clock nil): one
	// reading then serves both the runtime's times and a deadline.
	wallClock bool
	newID     func() string
	sinks     []EventSink
	redactor  *redact.Redactor
	commitTO  time.Duration
	codec     Codec
	args      *argMemory           // unredacted arguments of pending calls that held secrets
	retention Retention            // Config.Retention: the worker's sweeper
	approvers approvals.Authorizer // nil: anyone named decides anything
	window    int                  // Config.SessionWindow: DefaultSessionWindow, another size, or WholeSession

	reg   registry   // agents Work can drive
	lease leaseWatch // store round trips that did not fit the lease (lease.go)

	mu      sync.Mutex
	swept   string // the approvals policy version of the last full escalation pass (drive_approvals.go)
	closed  bool
	cancels map[string]context.CancelCauseFunc // run id → cancel of its live drive
	wg      sync.WaitGroup
}

// New returns a runtime over s. The runtime does not own s: [Runtime.Close]
// leaves it open, and the caller closes it after the runtime. A nil cfg
// means defaults; an invalid field is reported by name.
func New(s store.Store, cfg *Config) (*Runtime, error) {
	if s == nil {
		return nil, errors.New("actoviq: nil store")
	}
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if c.Tenant == "" {
		c.Tenant = store.DefaultTenant
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = 30 * time.Second
	}
	wallClock := c.Clock == nil
	if wallClock {
		c.Clock = time.Now
	}
	if c.NewID == nil {
		c.NewID = randomID
	}
	if c.Holder == "" {
		c.Holder = defaultHolder()
	}
	if c.CommitTimeout == 0 {
		c.CommitTimeout = 30 * time.Second
	}
	if c.SessionWindow == 0 {
		c.SessionWindow = DefaultSessionWindow
	}
	return &Runtime{
		store: s, tenant: c.Tenant, holder: c.Holder, instance: randomID()[:12], ttl: c.LeaseTTL, clock: c.Clock, wallClock: wallClock, newID: c.NewID,
		sinks: append([]EventSink(nil), c.Sinks...), redactor: redact.New(c.RedactKeys...), commitTO: c.CommitTimeout,
		codec: c.Codec, args: &argMemory{}, retention: c.Retention, approvers: c.Approvers, window: c.SessionWindow,
		cancels: map[string]context.CancelCauseFunc{},
	}, nil
}

func randomID() string {
	var b [16]byte
	var h [32]byte
	randomBytes(b[:])
	hex.Encode(h[:], b[:])
	return string(h[:])
}

// entropy is crypto/rand's output read ahead, 512 bytes at a time: an id
// per event would otherwise be a getrandom call each. Bytes handed out
// are cleared.
var entropy struct {
	sync.Mutex
	buf  [512]byte
	left int // buf[len(buf)-left:] is unused
}

// randomBytes fills b (at most 512 bytes) from crypto/rand.
func randomBytes(b []byte) {
	entropy.Lock()
	defer entropy.Unlock()
	if entropy.left < len(b) {
		_, _ = rand.Read(entropy.buf[:])
		entropy.left = len(entropy.buf)
	}
	from := len(entropy.buf) - entropy.left
	copy(b, entropy.buf[from:])
	clear(entropy.buf[from : from+len(b)])
	entropy.left -= len(b)
}

// Tenant returns the runtime's tenant (Config.Tenant, or [store.DefaultTenant]).
func (rt *Runtime) Tenant() string { return rt.tenant }

// Store returns the store the runtime was built over (not owned by it).
func (rt *Runtime) Store() store.Store { return rt.store }

// Close is a process shutting down, not a decision about its runs: it stops
// the drives of this runtime, waits for them, and returns. A run driven at
// Close never ends cancelled; its claim is released so another process can
// take it over at once with [Runtime.Resume]. A side effect in flight is
// interrupted, so its outcome is unknown, and the run stops interrupted for
// reconciliation, as after a crash; any other run keeps its status
// (running) and continues where it stopped. The calls driving those runs
// return an error matching [ErrClosed]; later Run and Resume calls on this
// runtime do too. Close does not close the store given to [New].
//
// Close returns once every drive has stopped: promptly, after the store
// call each one has in flight (on a SQLite file another process holds
// locked, a call waits up to the store's busy timeout), with one
// exception. A tool's result (or
// the record that its outcome is unknown, or that it never ran) is
// written before the drive stops, and when the store refuses that write
// as busy ([store.ErrBusy]: a SQLite file locked by another process), it
// is made again within Config.CommitTimeout: Close waits for it, since
// that result exists nowhere else. If the budget is spent all the same,
// the call is left started (reconciliation, as after a crash) and the
// drive's error matches both [ErrClosed] and [store.ErrBusy]. Any other
// write refused as busy (the model's answer, a call about to start) is
// not made again once Close is called: the call never ran, and runs when
// the run is resumed.
func (rt *Runtime) Close() error {
	rt.mu.Lock()
	rt.closed = true
	for _, c := range rt.cancels {
		c(ErrClosed)
	}
	rt.mu.Unlock()
	rt.wg.Wait()
	return nil
}
