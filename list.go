package actoviq

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// RunPage is one page of [Runtime.ListPage].
type RunPage struct {
	// Runs are the page's runs, newest first.
	Runs []*RunInfo
	// Next is the cursor of the next page (ListParams.After); empty when
	// no run follows (the store is asked for one run more than the page
	// holds). Cursors are keyset positions: a run created
	// or removed meanwhile neither repeats nor skips a run of a later page.
	Next string
}

// CursorError reports a list cursor that this runtime did not hand out.
type CursorError struct {
	// Cursor is the cursor as given.
	Cursor string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *CursorError) Error() string {
	return fmt.Sprintf("actoviq: invalid list cursor %q: %s", e.Cursor, e.Reason)
}

// encodeCursor makes an opaque cursor of a store cursor.
func encodeCursor(c *store.RunCursor) string {
	if c == nil {
		return ""
	}
	raw := strconv.FormatInt(c.At.UnixMicro(), 10) + "/" + c.ID
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// decodeCursor reads a cursor made by encodeCursor; "" is nil.
func decodeCursor(s string) (*store.RunCursor, error) {
	if s == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, &CursorError{Cursor: s, Reason: "not base64url"}
	}
	at, id, ok := strings.Cut(string(raw), "/")
	us, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || id == "" {
		return nil, &CursorError{Cursor: s, Reason: "not a list position"}
	}
	return &store.RunCursor{At: time.UnixMicro(us).UTC(), ID: id}, nil
}

// CursorAfter is the cursor of a list that continues after r (newest
// first), for a caller that cuts a page itself.
func CursorAfter(r *RunInfo) string {
	return encodeCursor(&store.RunCursor{At: r.CreatedAt, ID: r.ID})
}

// localHolderPrefix starts the holder of every claim taken on this host
// (see ParseHolder): such a claim may belong to a dead process, which only
// this host can tell.
func localHolderPrefix() string {
	host, _ := os.Hostname()
	if host == "" {
		return ""
	}
	return host + ":"
}

// listQuery is the store query of a derived status: the stored statuses
// it comes from and the claim state that tells them apart. The claim's
// expiry is judged by the store; a live claim of a process of this host
// is judged here too (it may be dead), so those runs are read as well and
// derived one by one.
func (rt *Runtime) listQuery(st Status, p *store.RunListParams) error {
	switch st {
	case "":
	case StatusRunning:
		p.Statuses = []store.RunStatus{store.RunRunning, store.RunInterrupted}
		p.Claim = store.ClaimFilter{State: store.ClaimLive}
	case StatusStalled:
		p.Status = store.RunRunning
		p.Claim = store.ClaimFilter{State: store.ClaimIdle, HolderPrefix: localHolderPrefix()}
	case StatusInterrupted:
		p.Status = store.RunInterrupted
		p.Claim = store.ClaimFilter{State: store.ClaimIdle, HolderPrefix: localHolderPrefix()}
	case StatusQueued, StatusCompleted, StatusFailed, StatusCancelled:
		p.Status = store.RunStatus(st)
	default:
		return &store.InvalidError{Field: "Status", Reason: fmt.Sprintf("unknown status %q", st)}
	}
	return nil
}

// ListPage lists one page of the tenant's runs, newest first, with derived
// statuses, and the cursor of the next page. Each page is one store query
// (an index walk from the cursor; derived statuses are filtered in it)
// plus one claim read per run that is running or interrupted.
func (rt *Runtime) ListPage(ctx context.Context, p *ListParams) (*RunPage, error) {
	if p == nil {
		p = &ListParams{}
	}
	if p.Limit < 0 {
		return nil, &store.InvalidError{Field: "Limit", Reason: "negative"}
	}
	after, err := decodeCursor(p.After)
	if err != nil {
		return nil, err
	}
	sp := store.RunListParams{Tenant: rt.tenant, ParentID: p.ParentID, Summary: true, After: after}
	if err := rt.listQuery(p.Status, &sp); err != nil {
		return nil, fmt.Errorf("actoviq: list runs: %w", err)
	}
	page := &RunPage{Runs: []*RunInfo{}}
	var dataErr error
	// A run the store returns but the derivation drops (a live claim of a
	// dead local process) leaves the page short: read on, from where the
	// store stopped, until the page is full or the store has no more.
	// The store is asked for one run more than the page needs: when it
	// is there, the page has a next one; when it is not, Next stays empty.
	for {
		sp.Now = rt.clock()
		sp.Limit = 0
		if p.Limit > 0 {
			sp.Limit = p.Limit - len(page.Runs) + 1
		}
		runs, err := rt.store.RunList(ctx, &sp)
		if err != nil && !errors.Is(err, store.ErrData) {
			return nil, fmt.Errorf("actoviq: list runs: %w", err)
		}
		if err != nil {
			// A corrupt run hides no other: the healthy ones come with the error.
			dataErr = errors.Join(dataErr, fmt.Errorf("actoviq: list runs: %w", err))
		}
		infos, err := rt.summaries(ctx, runs)
		if err != nil {
			return nil, err
		}
		for i, info := range infos {
			if p.Limit > 0 && len(page.Runs) == p.Limit {
				// A run follows the full page: the next page starts after
				// the last run this one read.
				page.Next = encodeCursor(sp.After)
				return page, dataErr
			}
			if p.Status == "" || info.Status == p.Status {
				page.Runs = append(page.Runs, info)
			}
			sp.After = store.CursorOf(runs[i], store.RunsNewest)
		}
		if sp.Limit == 0 || len(runs) < sp.Limit {
			return page, dataErr // the store has no more
		}
	}
}

// summaries are listed runs as RunInfo, with their derived statuses: the
// claims of the runs that have one that matters (running or interrupted)
// are read in one query.
func (rt *Runtime) summaries(ctx context.Context, runs []*store.Run) ([]*RunInfo, error) {
	claims, err := rt.claimsOf(ctx, runs)
	if err != nil {
		return nil, err
	}
	out := make([]*RunInfo, len(runs))
	for i, r := range runs {
		status, holder := rt.derive(r, claims[store.RunClaimKey(r.ID)])
		out[i] = &RunInfo{ID: r.ID, ParentID: r.ParentID, SessionID: r.SessionID, AgentID: r.AgentID, AgentDigest: r.AgentDigest,
			Status: status, StoredStatus: statusOf(r.Status), Holder: holder, Meta: r.Meta, Deadline: r.Deadline,
			CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Revision: r.Revision}
	}
	return out, nil
}

// claimsOf reads, in one query, the claims of the runs whose status a
// claim can change (running, interrupted), by key.
func (rt *Runtime) claimsOf(ctx context.Context, runs []*store.Run) (map[string]*store.Claim, error) {
	var keys []string
	for _, r := range runs {
		if r.Status == store.RunRunning || r.Status == store.RunInterrupted {
			keys = append(keys, store.RunClaimKey(r.ID))
		}
	}
	out := map[string]*store.Claim{}
	for len(keys) > 0 {
		n := min(len(keys), store.MaxLedgerRuns)
		cs, err := rt.store.ClaimList(ctx, &store.ClaimListParams{Tenant: rt.tenant, Keys: keys[:n]})
		if err != nil {
			return nil, fmt.Errorf("actoviq: claims of listed runs: %w", err)
		}
		for _, c := range cs {
			out[c.Key] = c
		}
		keys = keys[n:]
	}
	return out, nil
}

// derive is the status an operator sees of a run with claim c (nil: none);
// see [Runtime.liveness].
func (rt *Runtime) derive(r *store.Run, c *store.Claim) (Status, *RunClaim) {
	st := statusOf(r.Status)
	if r.Status != store.RunRunning && r.Status != store.RunInterrupted {
		return st, nil
	}
	if c == nil {
		if r.Status == store.RunRunning {
			return StatusStalled, nil
		}
		return st, nil
	}
	h := rt.runClaim(c)
	switch {
	case h.Live:
		return StatusRunning, h
	case r.Status == store.RunRunning:
		return StatusStalled, h
	}
	return st, h
}
