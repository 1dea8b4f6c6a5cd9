package actoviq

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/actoviq/actoviq-go/internal/redact"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
)

// Config configures an [Runtime]. A nil *Config means defaults.
type Config struct {
	// Tenant scopes every record; empty means "default".
	Tenant string
	// Holder identifies this worker in claims; empty means
	// "<hostname>:<pid>:<process start>.<random>" (see [ParseHolder]).
	// Each drive of a run adds its own suffix,
	// so two drives in one process are two holders too.
	Holder string
	// LeaseTTL is how long a run claim lives without a heartbeat; zero
	// means 30 s, otherwise at least 1 ms. Heartbeats run every LeaseTTL/3.
	LeaseTTL time.Duration
	// Clock gives the time; nil means time.Now. Get and List compare
	// claim expiries, which the store stamps with its own clock, against
	// it: a Clock that runs behind the store's shows a released claim as
	// live (a stopped run as running) until it catches up.
	Clock func() time.Time
	// NewID makes run ids and event ids; nil means 16 random hex bytes.
	// It must be safe for concurrent use.
	NewID func() string
	// Sinks receive every event of every run.
	Sinks []EventSink
	// RedactKeys adds secret-looking keys to the default list.
	RedactKeys []string
	// Codec seals the arguments of tool calls that hold secrets, so that a
	// process other than the one that received them can run them (a
	// resume after a crash, a re-execute decided elsewhere). nil means
	// none: such arguments live only in this runtime's memory, and another
	// process stops with an interruption instead of running the call. See
	// [NewSealCodec] for the format, key rotation and wrong keys.
	Codec Codec
	// CommitTimeout bounds writes that record an outcome; they run on a
	// context detached from the caller's cancellation. Zero means 30 s;
	// negative is refused.
	CommitTimeout time.Duration
}

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
	newID    func() string
	sinks    []EventSink
	redactor *redact.Redactor
	commitTO time.Duration
	codec    Codec
	args     *argMemory // unredacted arguments of pending calls that held secrets

	reg registry // agents Work can drive (worker.go)

	mu      sync.Mutex
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
		c.Tenant = "default"
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = 30 * time.Second
	}
	if c.Clock == nil {
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
	return &Runtime{
		store: s, tenant: c.Tenant, holder: c.Holder, instance: randomID()[:12], ttl: c.LeaseTTL, clock: c.Clock, newID: c.NewID,
		sinks: append([]EventSink(nil), c.Sinks...), redactor: redact.New(c.RedactKeys...), commitTO: c.CommitTimeout,
		codec: c.Codec, args: &argMemory{},
		cancels: map[string]context.CancelCauseFunc{},
	}, nil
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Tenant returns the runtime's tenant (Config.Tenant, or "default").
func (e *Runtime) Tenant() string { return e.tenant }

// Store returns the store the runtime was built over (not owned by it).
func (e *Runtime) Store() store.Store { return e.store }

// Close is a process shutting down, not a decision about its runs: it stops
// the drives of this runtime, waits for them, and returns. A run driven at
// Close never ends cancelled; its claim is released so another process can
// take it over at once with [Runtime.Resume]. A side effect in flight is
// interrupted, so its outcome is unknown, and the run stops interrupted for
// reconciliation, as after a crash; any other run keeps its status
// (running) and continues where it stopped. The calls driving those runs
// return an error matching [ErrClosed]; later Run and Resume calls on this
// runtime do too. Close does not close the store given to [New].
func (e *Runtime) Close() error {
	e.mu.Lock()
	e.closed = true
	for _, c := range e.cancels {
		c(ErrClosed)
	}
	e.mu.Unlock()
	e.wg.Wait()
	return nil
}

// checkpoint is the engine's durable run state (store.Run.Checkpoint).
type checkpoint struct {
	V int `json:"v"`
	// Child is set for a child run (child.go).
	Child *childInfo `json:"child,omitempty"`
	// Items is the transcript: input, model responses and the tool results
	// of every turn before the pending one. Tool-call arguments are stored
	// redacted.
	Items []item.Item `json:"items"`
	// Turn counts committed model responses.
	Turn int `json:"turn"`
	// Pending lists the call ids of the last response, in order, until
	// their results are folded into Items.
	Pending []string `json:"pending,omitempty"`
	// Redacted marks pending calls whose persisted arguments lost secrets.
	Redacted map[string]bool `json:"redacted,omitempty"`
	// Sealed holds, with a Config.Codec, the sealed unredacted arguments
	// of the Redacted calls, for a process other than the one that
	// received them (see [Codec]).
	Sealed map[string]string `json:"sealed,omitempty"`
	Usage  item.Usage        `json:"usage"`
	// Output is the final answer of a completed run.
	Output []item.Item `json:"output,omitempty"`
	Error  *RunError   `json:"error,omitempty"`
	// Interruptions as of the last stop, with their evidence.
	Interruptions []Interruption `json:"interruptions,omitempty"`
	// Rejected holds a model response the runtime refused (evidence).
	Rejected []item.Item `json:"rejected,omitempty"`
	TraceID  string      `json:"trace_id"`
	// PolicyVersion is the approval policy version of the last drive;
	// approvals recorded without an agent at hand bind to it.
	PolicyVersion string `json:"policy_version"`
	// SessionBase is the session revision the run continues from;
	// SessionPrefix the number of leading Items that came from it.
	SessionBase   int64 `json:"session_base,omitempty"`
	SessionPrefix int   `json:"session_prefix,omitempty"`
	// Malformed counts tool calls whose arguments were not a JSON object
	// (Limits.MaxMalformedCalls).
	Malformed int `json:"malformed,omitempty"`
	// SessionAppended is set once the run's items are in the session.
	SessionAppended bool `json:"session_appended,omitempty"`
	// Agent records the agent version that drove the run last;
	// AgentChanges the versions that took it over since.
	Agent        *agentRecord        `json:"agent,omitempty"`
	AgentChanges []AgentChangeRecord `json:"agent_changes,omitempty"`
	// ProviderFailures counts provider interruptions in a row.
	ProviderFailures int `json:"provider_failures,omitempty"`
}

func decodeCheckpoint(r *store.Run) (*checkpoint, error) {
	var cp checkpoint
	if err := json.Unmarshal(r.Checkpoint, &cp); err != nil {
		return nil, &store.DataError{Kind: "checkpoint", ID: r.ID, Err: err}
	}
	if cp.V != 1 {
		return nil, &store.DataError{Kind: "checkpoint", ID: r.ID, Err: fmt.Errorf("unknown checkpoint version %d", cp.V)}
	}
	return &cp, nil
}

func statusOf(s store.RunStatus) Status {
	switch s {
	case store.RunCompleted:
		return StatusCompleted
	case store.RunInterrupted:
		return StatusInterrupted
	case store.RunFailed:
		return StatusFailed
	case store.RunCancelled:
		return StatusCancelled
	case store.RunQueued:
		return StatusQueued
	}
	return StatusRunning
}

func (cp *checkpoint) result(runID string, status store.RunStatus) *RunResult {
	res := &RunResult{RunID: runID, Status: statusOf(status), Output: cp.Output, Usage: cp.Usage, Error: cp.Error}
	if status == store.RunInterrupted {
		res.Interruptions = cp.Interruptions
	}
	return res
}
