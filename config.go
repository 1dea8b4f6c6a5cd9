package actoviq

import (
	"fmt"

	"github.com/actoviq/actoviq-go/approvals"
	"strings"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// minLeaseTTL is the shortest lease a runtime accepts: heartbeats run
// every LeaseTTL/3, and a lease shorter than a store round trip would
// expire while it is being renewed.
const minLeaseTTL = time.Millisecond

// validate reports the first Config field whose value cannot work, by
// name. Zero values mean defaults and are always valid.
func (c *Config) validate() error {
	switch {
	case c.LeaseTTL < 0:
		return fmt.Errorf("actoviq: Config.LeaseTTL is %v; it must be positive (zero means 30s)", c.LeaseTTL)
	case c.LeaseTTL > 0 && c.LeaseTTL < minLeaseTTL:
		return fmt.Errorf("actoviq: Config.LeaseTTL is %v; it must be at least %v (heartbeats run every LeaseTTL/3)", c.LeaseTTL, minLeaseTTL)
	case c.CommitTimeout < 0:
		return fmt.Errorf("actoviq: Config.CommitTimeout is %v; it must be positive (zero means 30s)", c.CommitTimeout)
	case c.SessionWindow < 0 && c.SessionWindow != WholeSession:
		return fmt.Errorf("actoviq: Config.SessionWindow is %d: want a number of items, 0 for DefaultSessionWindow (%d), or WholeSession (-1)",
			c.SessionWindow, DefaultSessionWindow)
	}
	if err := c.Retention.validate(); err != nil {
		return err
	}
	if err := checkControl("Config.Tenant", c.Tenant); err != nil {
		return err
	}
	if strings.ContainsAny(c.Tenant, "/:") {
		// Keys are <tenant>/<runID>:<callID>: a separator in the tenant
		// would make a key ambiguous to anyone who splits it.
		return &IDError{Field: "Config.Tenant", ID: c.Tenant, Reason: `a tenant must not contain "/" or ":" (key separators)`}
	}
	if err := checkControl("Config.Holder", c.Holder); err != nil {
		return err
	}
	for i, s := range c.Sinks {
		if s == nil {
			return fmt.Errorf("actoviq: Config.Sinks[%d] is nil", i)
		}
	}
	return nil
}

// validate reports the first limit that cannot work, by field name.
func (l Limits) validate(agentID string) error {
	bad := func(field string, v any, zero string) error {
		return fmt.Errorf("actoviq: agent %s: Limits.%s is %v; it must not be negative (zero means %s)", agentID, field, v, zero)
	}
	switch {
	case l.MaxTurns < 0:
		return bad("MaxTurns", l.MaxTurns, "16")
	case l.RunTimeout < 0:
		return bad("RunTimeout", l.RunTimeout, "no deadline")
	case l.ModelTimeout < 0:
		return bad("ModelTimeout", l.ModelTimeout, "10m")
	case l.ToolTimeout < 0:
		return bad("ToolTimeout", l.ToolTimeout, "5m")
	case l.ReadParallelism < 0:
		return bad("ReadParallelism", l.ReadParallelism, "4")
	case l.MaxProviderInterruptions < 0:
		return bad("MaxProviderInterruptions", l.MaxProviderInterruptions, "5")
	case l.MaxToolOutput < 0:
		return bad("MaxToolOutput", l.MaxToolOutput, "1 MiB")
	case l.MaxMalformedCalls < 0:
		return bad("MaxMalformedCalls", l.MaxMalformedCalls, "3")
	}
	return nil
}

// checkControl refuses a name with control characters: it would be
// ambiguous in keys, logs and the CLI's output.
func checkControl(field, id string) error {
	for _, r := range id {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("actoviq: %s %q contains a control character", field, id)
		}
	}
	return nil
}

// Config configures an [Runtime]. A nil *Config means defaults.
type Config struct {
	// Tenant scopes every record; empty means [store.DefaultTenant].
	Tenant string
	// Holder identifies this worker in claims; empty means
	// "<hostname>:<pid>:<process start>.<random>" (see [ParseHolder]).
	// Each drive of a run adds its own suffix,
	// so two drives in one process are two holders too.
	Holder string
	// LeaseTTL is how long a run claim lives without a heartbeat; zero
	// means 30 s, otherwise at least 1 ms. Heartbeats run every LeaseTTL/3.
	// It must hold [LeaseSafeMultiple] store round trips: the runtime
	// times them and reports a lease too short for its store
	// ([Runtime.LeaseWarning], the run.lease_short event, Work's log).
	LeaseTTL time.Duration
	// Clock gives the time; nil means time.Now. Get and List compare
	// claim expiries, which the store stamps with its own clock, against
	// it: a Clock that runs behind the store's shows a released claim as
	// live (a stopped run as running) until it catches up. It is the
	// same type the store backends take as their clock.
	Clock store.Clock
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
	// context detached from the caller's cancellation. A write the store
	// refuses for lock contention ([store.ErrBusy]: nothing was written,
	// such as a SQLite file locked by another process past its busy
	// timeout) is made again, with the same revisions and fence, within
	// this budget. Zero means 30 s; negative is refused.
	//
	// When the drive is told to stop meanwhile ([Runtime.Close], the
	// caller's cancellation, [Runtime.Cancel], a worker's release), the
	// retries of a write that records what a tool did (its result, that
	// its outcome is unknown, that it never ran) go on within this budget:
	// that result exists nowhere else, and a call whose result is lost goes
	// to reconciliation. So do those of the write that records a
	// cancellation. The retries of any other write (the model's answer, a
	// call about to start) stop at once, between two tries, and the drive
	// stops as the cause says: a call not recorded started never runs.
	// A [Runtime.Close] may therefore wait up to this budget (plus one try
	// of the store) for a result to be recorded: keep it below the time a
	// shutdown allows the process (a process killed before the write leaves
	// the call started, for reconciliation, as a crash does).
	CommitTimeout time.Duration
	// Retention removes finished runs after a while (see [Retention] for
	// what is never removed): [Runtime.Work] sweeps by it, and
	// [Runtime.Prune] removes on demand. The zero value keeps every run.
	Retention Retention
	// Approvers says who may decide what (approve, reject, settle) about
	// which calls, how many distinct people must approve a call, how long
	// an approval stays good before its call starts, and when a call that
	// waits for approval escalates. Every decision ([Runtime.Decide],
	// decisions given to Resume, the console's and the CLI's) is checked
	// against it, and a refused one returns an error matching
	// [approvals.ErrRefused] that says why. Nil means anyone named may make
	// any decision, one approval suffices and approvals do not expire.
	// [approvals.Load] reads a policy file; a team with an identity
	// provider sets [approvals.Policy].Directory or implements
	// [approvals.Authorizer].
	Approvers approvals.Authorizer
	// SessionWindow is the session window of agents whose
	// [AgentSpec.SessionWindow] is 0: how many of a session's last items
	// a run continuing it takes. Zero means [DefaultSessionWindow];
	// [WholeSession] gives such agents the whole session. Other negative
	// values are refused.
	SessionWindow int
}
