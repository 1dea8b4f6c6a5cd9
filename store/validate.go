package store

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/actoviq/actoviq-go/internal/jsonenc"
)

// Validation shared by every backend, so that all of them refuse the same
// inputs with the same typed error before touching storage.

func invalid(field, reason string) error { return &InvalidError{Field: field, Reason: reason} }

func needTenant(t string) error { return need("Tenant", t) }

func need(field, v string) error {
	if v == "" {
		return invalid(field, "empty")
	}
	return text(field, v)
}

// notUTF8 is why a string or JSON with bytes that are not UTF-8 (or a
// string with a NUL) is refused.
const notUTF8 = "not UTF-8 text without NUL (a store keeps text in UTF-8 only, and PostgreSQL's text holds no NUL)"

// goodText reports whether v is UTF-8 without a NUL: what PostgreSQL's
// text holds, so what every backend takes.
func goodText(v string) bool { return utf8.ValidString(v) && strings.IndexByte(v, 0) < 0 }

// text refuses a string that is not UTF-8 or holds a NUL.
func text(field, v string) error {
	if !goodText(v) {
		return invalid(field, notUTF8)
	}
	return nil
}

// badText returns the name of the first of fields whose value is not
// UTF-8 or holds a NUL, or "".
func badText(fields ...[2]string) string {
	for _, f := range fields {
		if !goodText(f[1]) {
			return f[0]
		}
	}
	return ""
}

func optionalJSON(field string, b json.RawMessage) error {
	if b != nil {
		return checkJSON(field, b)
	}
	return nil
}

// checkJSON refuses b unless it is valid JSON in UTF-8: bytes that are not
// UTF-8 inside a string pass json.Valid, but PostgreSQL's text refuses
// them, so every backend refuses them alike (the runtime replaces them in
// a tool's structured result before it records it, as json.Marshal does
// in a Go string).
func checkJSON(field string, b json.RawMessage) error {
	if r := badJSON(b); r != "" {
		return invalid(field, r)
	}
	return nil
}

// badJSON says what is wrong with b, or "".
func badJSON(b json.RawMessage) string {
	switch {
	case !jsonenc.Valid(b):
		return "not valid JSON"
	case !utf8.Valid(b):
		return "JSON with bytes that are not UTF-8 (a store keeps text in UTF-8 only)"
	}
	return ""
}

// badOptional is badJSON for a field that may be absent (nil).
func badOptional(b json.RawMessage) string {
	if b == nil {
		return ""
	}
	return badJSON(b)
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
	if f := badText([2]string{"Run.ParentID", r.ParentID}, [2]string{"Run.SessionID", r.SessionID},
		[2]string{"Run.AgentID", r.AgentID}, [2]string{"Run.AgentDigest", r.AgentDigest}); f != "" {
		return invalid(f, notUTF8)
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
	// A few writes (a call's started write carrying the committed one
	// before it) are compared pairwise, without a map.
	var seen map[string]bool
	if len(p.Ledger) > 8 {
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
		} else {
			for _, before := range p.Ledger[:i] {
				if before.Entry.CallID == e.CallID {
					return invalid(f(""), "call id written twice in one write")
				}
			}
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
		case badOptional(e.Args) != "":
			return invalid(f(".Args"), badOptional(e.Args))
		case badOptional(e.Result) != "":
			return invalid(f(".Result"), badOptional(e.Result))
		case badOptional(e.Error) != "":
			return invalid(f(".Error"), badOptional(e.Error))
		}
		if b := badText([2]string{".CallID", e.CallID}, [2]string{".Tool", e.Tool}, [2]string{".Effect", e.Effect},
			[2]string{".IdempotencyKey", e.IdempotencyKey}, [2]string{".ArgsDigest", e.ArgsDigest}, [2]string{".Holder", e.Holder}); b != "" {
			return invalid(f(b), notUTF8)
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
	case badOptional(ev.Data) != "":
		return invalid(field()+".Data", badOptional(ev.Data))
	}
	if b := badText([2]string{".Type", ev.Type}, [2]string{".ID", ev.ID}, [2]string{".ParentRunID", ev.ParentRunID},
		[2]string{".TraceID", ev.TraceID}, [2]string{".SpanID", ev.SpanID}); b != "" {
		return invalid(field()+b, notUTF8)
	}
	return nil
}

// items checks a list of log items: each is valid JSON.
func items(field string, its []json.RawMessage) error {
	for i, it := range its {
		if r := badJSON(it); r != "" {
			return invalid(fmt.Sprintf("%s[%d]", field, i), r)
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
	if err := items("Items", p.Items); err != nil {
		return err
	}
	if err := text("RunID", p.RunID); err != nil {
		return err
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
	if err := checkJSON("Data", p.Data); err != nil {
		return err
	}
	return firstErr(needTenant(p.Tenant), need("SessionID", p.SessionID))
}

// Validate checks the parameters.
func (p *OncePutParams) Validate() error {
	if err := checkJSON("Value", p.Value); err != nil {
		return err
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
