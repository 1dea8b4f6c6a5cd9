package store

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/actoviq/actoviq-go/internal/jsonenc"
)

// Validation shared by every backend, so that all of them refuse the same
// inputs with the same typed error before touching storage.

func invalid(field, reason string) error { return &InvalidError{Field: field, Reason: reason} }

func needTenant(t string) error {
	if t == "" {
		return invalid("Tenant", "empty")
	}
	return nil
}

func need(field, v string) error {
	if v == "" {
		return invalid(field, "empty")
	}
	return nil
}

func optionalJSON(field string, b json.RawMessage) error {
	if b != nil && !jsonenc.Valid(b) {
		return invalid(field, "not valid JSON")
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Validate checks the parameters.
func (p *ClaimAcquireParams) Validate() error {
	if p.TTL <= 0 {
		return invalid("TTL", "must be positive")
	}
	return firstErr(needTenant(p.Tenant), need("Key", p.Key), need("Holder", p.Holder))
}

// Validate checks the parameters.
func (p *ClaimRenewParams) Validate() error {
	if p.TTL <= 0 {
		return invalid("TTL", "must be positive")
	}
	return firstErr(needTenant(p.Tenant), p.Fence.validate())
}

// Validate checks the parameters.
func (p *ClaimReleaseParams) Validate() error {
	if p.Remove && !strings.HasPrefix(p.Fence.Key, "children:") && !strings.HasPrefix(p.Fence.Key, "escalate:") {
		return invalid("Remove", "only for a place in a tree's child budget (ChildPlaceKey) or an escalation timer (EscalationKey)")
	}
	return firstErr(needTenant(p.Tenant), p.Fence.validate())
}

func (f *Fence) validate() error {
	return firstErr(need("Fence.Key", f.Key), need("Fence.Holder", f.Holder))
}

// Validate checks the parameters.
func (p *RunClaimNextParams) Validate() error {
	if p.TTL <= 0 {
		return invalid("TTL", "must be positive")
	}
	for i, id := range p.AgentIDs {
		if id == "" {
			return invalid(fmt.Sprintf("AgentIDs[%d]", i), "empty agent id")
		}
	}
	return firstErr(needTenant(p.Tenant), need("Holder", p.Holder))
}

// Validate checks the parameters.
func (p *RunCreateParams) Validate() error {
	if p.Run == nil {
		return invalid("Run", "nil")
	}
	r := p.Run
	if !r.Status.Valid() {
		return invalid("Run.Status", fmt.Sprintf("unknown status %q", r.Status))
	}
	if err := items("Run.Log", r.Log); err != nil {
		return err
	}
	if p.Holder != "" && p.TTL <= 0 {
		return invalid("TTL", "must be positive with a Holder")
	}
	for i, ev := range p.Events {
		if ev == nil {
			return invalid(fmt.Sprintf("Events[%d]", i), "nil event")
		}
		if err := checkEvent(ev, func() string { return fmt.Sprintf("Events[%d]", i) }); err != nil {
			return err
		}
	}
	return firstErr(needTenant(r.Tenant), need("Run.ID", r.ID),
		optionalJSON("Run.Checkpoint", r.Checkpoint), optionalJSON("Run.Meta", r.Meta))
}

// Validate checks the parameters.
func (p *RunWriteParams) Validate() error {
	if err := firstErr(needTenant(p.Tenant), need("RunID", p.RunID)); err != nil {
		return err
	}
	if p.Fence != nil {
		if err := p.Fence.validate(); err != nil {
			return err
		}
	}
	if p.Run == nil && len(p.Ledger) == 0 && len(p.Events) == 0 {
		return invalid("RunWriteParams", "nothing to write")
	}
	if p.Release && p.Fence == nil {
		return invalid("Release", "needs a Fence")
	}
	if u := p.Run; u != nil {
		if !u.Status.Valid() {
			return invalid("Run.Status", fmt.Sprintf("unknown status %q", u.Status))
		}
		if u.ExpectedRevision <= 0 {
			return invalid("Run.ExpectedRevision", "must be positive")
		}
		if err := firstErr(optionalJSON("Run.Checkpoint", u.Checkpoint), optionalJSON("Run.Meta", u.Meta),
			items("Run.Append", u.Append)); err != nil {
			return err
		}
	}
	// Field names are built only for an error: this runs on every write.
	var seen map[string]bool
	if len(p.Ledger) > 1 {
		seen = make(map[string]bool, len(p.Ledger))
	}
	for i, w := range p.Ledger {
		e := w.Entry
		f := func(sub string) string { return fmt.Sprintf("Ledger[%d]", i) + sub }
		if e == nil {
			return invalid(f(""), "nil entry")
		}
		if e.RunID != p.RunID || e.Tenant != p.Tenant {
			return invalid(f(""), "entry belongs to another run or tenant")
		}
		if seen != nil {
			if seen[e.CallID] {
				return invalid(f(""), "call id written twice in one write")
			}
			seen[e.CallID] = true
		}
		if !e.State.Valid() {
			return invalid(f(".State"), fmt.Sprintf("unknown state %q", e.State))
		}
		if w.ExpectedRevision < 0 {
			return invalid(f(".ExpectedRevision"), "negative")
		}
		switch {
		case e.CallID == "":
			return invalid(f(".CallID"), "empty")
		case e.Tool == "":
			return invalid(f(".Tool"), "empty")
		case !validOptional(e.Args):
			return invalid(f(".Args"), "not valid JSON")
		case !validOptional(e.Result):
			return invalid(f(".Result"), "not valid JSON")
		case !validOptional(e.Error):
			return invalid(f(".Error"), "not valid JSON")
		}
		if w.Event != nil {
			if err := checkEvent(w.Event, func() string { return f(".Event") }); err != nil {
				return err
			}
		}
	}
	for i, ev := range p.Events {
		f := func() string { return fmt.Sprintf("Events[%d]", i) }
		if ev == nil {
			return invalid(f(), "nil event")
		}
		if err := checkEvent(ev, f); err != nil {
			return err
		}
	}
	return nil
}

// checkEvent checks an event; field names it for an error.
func checkEvent(ev *EventRecord, field func() string) error {
	switch {
	case ev.Type == "":
		return invalid(field()+".Type", "empty")
	case !validOptional(ev.Data):
		return invalid(field()+".Data", "not valid JSON")
	}
	return nil
}

// validOptional reports whether b is absent (nil) or valid JSON.
func validOptional(b json.RawMessage) bool { return b == nil || jsonenc.Valid(b) }

// items checks a list of log items: each is valid JSON.
func items(field string, its []json.RawMessage) error {
	for i, it := range its {
		if !jsonenc.Valid(it) {
			return invalid(fmt.Sprintf("%s[%d]", field, i), "not valid JSON")
		}
	}
	return nil
}

// Validate checks the parameters.
func (p *SessionAppendParams) Validate() error {
	if len(p.Items) == 0 {
		return invalid("Items", "empty")
	}
	if p.ExpectedRevision < 0 {
		return invalid("ExpectedRevision", "negative")
	}
	if p.Turn < 0 {
		return invalid("Turn", "negative")
	}
	for i, it := range p.Items {
		if !jsonenc.Valid(it) {
			return invalid(fmt.Sprintf("Items[%d]", i), "not valid JSON")
		}
	}
	if p.Fence != nil {
		if err := p.Fence.validate(); err != nil {
			return err
		}
	}
	return firstErr(needTenant(p.Tenant), need("SessionID", p.SessionID))
}

// Validate checks the parameters.
func (p *SessionSnapshotPutParams) Validate() error {
	if p.Revision <= 0 {
		return invalid("Revision", "must be positive")
	}
	if !jsonenc.Valid(p.Data) {
		return invalid("Data", "not valid JSON")
	}
	return firstErr(needTenant(p.Tenant), need("SessionID", p.SessionID))
}

// Validate checks the parameters.
func (p *OncePutParams) Validate() error {
	if !jsonenc.Valid(p.Value) {
		return invalid("Value", "not valid JSON")
	}
	return firstErr(needTenant(p.Tenant), need("Key", p.Key))
}

// Time normalises a timestamp the way every backend stores it: UTC, with
// microsecond precision.
func Time(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Microsecond)
}

// Clock returns the current time. Backends take one in their config so that
// tests can drive claim expiry; nil means time.Now.
type Clock func() time.Time

// Now returns c() or time.Now() when c is nil, normalised by [Time].
func (c Clock) Now() time.Time {
	if c == nil {
		return Time(time.Now())
	}
	return Time(c())
}

// Validate checks the parameters.
func (p *ClaimGetParams) Validate() error { return firstErr(needTenant(p.Tenant), need("Key", p.Key)) }

// Validate checks the parameters.
func (p *EventListParams) Validate() error {
	if p.AfterSeq < 0 {
		return invalid("AfterSeq", "negative")
	}
	if p.Limit < 0 {
		return invalid("Limit", "negative")
	}
	return firstErr(needTenant(p.Tenant), need("RunID", p.RunID))
}

// Validate checks the parameters.
func (p *LedgerGetParams) Validate() error {
	return firstErr(needTenant(p.Tenant), need("RunID", p.RunID), need("CallID", p.CallID))
}

// Validate checks the parameters.
func (p *LedgerListParams) Validate() error {
	if len(p.RunIDs) > 0 {
		if p.RunID != "" {
			return invalid("RunIDs", "set together with RunID")
		}
		if len(p.RunIDs) > MaxLedgerRuns {
			return invalid("RunIDs", fmt.Sprintf("%d runs, more than %d", len(p.RunIDs), MaxLedgerRuns))
		}
		for i, id := range p.RunIDs {
			if id == "" {
				return invalid(fmt.Sprintf("RunIDs[%d]", i), "empty")
			}
		}
		return needTenant(p.Tenant)
	}
	return firstErr(needTenant(p.Tenant), need("RunID", p.RunID))
}

// Validate checks the parameters.
func (p *OnceGetParams) Validate() error { return firstErr(needTenant(p.Tenant), need("Key", p.Key)) }

// Validate checks the parameters.
func (p *RunGetParams) Validate() error { return firstErr(needTenant(p.Tenant), need("ID", p.ID)) }

// Validate checks the parameters.
func (p *RunListParams) Validate() error {
	if p.Status != "" && !p.Status.Valid() {
		return invalid("Status", fmt.Sprintf("unknown status %q", p.Status))
	}
	for i, s := range p.Statuses {
		if !s.Valid() {
			return invalid(fmt.Sprintf("Statuses[%d]", i), fmt.Sprintf("unknown status %q", s))
		}
	}
	if p.Limit < 0 {
		return invalid("Limit", "negative")
	}
	switch p.Order {
	case RunsNewest, RunsWaitingLongest:
	default:
		return invalid("Order", fmt.Sprintf("unknown order %q", p.Order))
	}
	if p.After != nil && p.After.ID == "" {
		return invalid("After.ID", "empty")
	}
	return firstErr(needTenant(p.Tenant), p.Claim.validate())
}

// Validate checks the parameters.
func (p *SessionLoadParams) Validate() error {
	if err := firstErr(needTenant(p.Tenant), need("SessionID", p.SessionID)); err != nil {
		return err
	}
	if p.AsOf < 0 {
		return invalid("AsOf", "negative")
	}
	if p.Last < 0 {
		return invalid("Last", "negative")
	}
	return nil
}

// Validator is what every params struct implements.
type Validator interface {
	// Validate returns an [*InvalidError] naming the first bad field.
	Validate() error
}

// Check validates params for a backend: a nil pointer is an
// [*InvalidError] too, never a panic.
func Check(p Validator) error {
	if p == nil || reflect.ValueOf(p).IsNil() {
		return invalid("params", "nil")
	}
	return p.Validate()
}
