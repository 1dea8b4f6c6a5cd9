package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/store"
)

// InboxItem is one thing that waits for a person.
type InboxItem struct {
	// Kind is the interruption kind (approval, reconciliation, recovery,
	// provider, ...) or "stalled" for a run whose worker is gone.
	Kind string `json:"kind"`
	// RunID names the run.
	RunID string `json:"run_id"`
	// AgentID is the agent the run was started with.
	AgentID string `json:"agent_id"`
	// CallID names the call in the run.
	CallID string `json:"call_id,omitempty"`
	// Tool is the called tool's name.
	Tool string `json:"tool,omitempty"`
	// Effect is the tool's declared effect.
	Effect string `json:"effect,omitempty"`
	// State is the call's ledger state.
	State string `json:"state,omitempty"`
	// Since is when it started waiting; AgeSeconds is how long ago that was.
	Since      time.Time `json:"since"`
	AgeSeconds int64     `json:"age_seconds"`
	// Reason is one line: why it waits.
	Reason string `json:"reason"`
	// Summary is one line of the call's arguments as stored (secrets
	// redacted), e.g. "to: ada · amount: 42": what is to be approved or
	// settled. Empty when the call has no arguments.
	Summary string `json:"summary,omitempty"`
	// Approval is where an approval stands: who approved so far, how many
	// are needed, and whether the wait was escalated.
	Approval *actoviq.ApprovalStatus `json:"approval,omitempty"`
}

// Inbox is GET /api/v1/inbox.
type Inbox struct {
	// Items wait for a person, oldest first.
	Items []InboxItem `json:"items"`
	// Kinds, Agents and Tools are the values the filters offer.
	Kinds  []string `json:"kinds"`
	Agents []string `json:"agents"`
	Tools  []string `json:"tools"`
	// Totals counts the runs waiting, by kind, over the whole inbox (every
	// page, whatever the filters); Total is their sum. An interrupted run
	// counts under the kind it stopped for.
	Totals map[string]int64 `json:"totals"`
	Total  int64            `json:"total"`
	// Runs is how many runs this page shows (a run may show several items).
	Runs int `json:"runs"`
	// Next is the cursor of the next page (?after=); empty on the last.
	Next string `json:"next,omitempty"`
	// Cut says, when this page is not the whole inbox, how much it shows
	// and how to get the rest. Empty when the page is everything.
	Cut string `json:"cut,omitempty"`
	// Narrowed says, when the tool filter (or kind "resume", a state of
	// the ledger rather than of the run) is set, that it narrows this
	// page's runs only: the store pages by kind and agent, so runs on
	// later pages may match too, and Totals do not follow it.
	Narrowed string `json:"narrowed,omitempty"`
	// Warning reports runs that could not be read (they are not hidden
	// silently).
	Warning string `json:"warning,omitempty"`
}

type inboxFilter struct{ kind, agent, tool, after string }

func filterFrom(r *http.Request) inboxFilter {
	q := r.URL.Query()
	return inboxFilter{q.Get("kind"), q.Get("agent"), q.Get("tool"), q.Get("after")}
}

// inbox is one page of what waits for a person, oldest first: a fixed
// number of store queries (Runtime.Inbox), whatever the store holds. The
// kind and agent filters are applied by the store; the tool filter (and
// kind "resume", a state of the ledger) narrows the page's items, and
// says so (Inbox.Narrowed).
func (c *Console) inbox(ctx context.Context, f inboxFilter) (*Inbox, error) {
	p := &actoviq.InboxParams{Kind: f.kind, AgentID: f.agent, Limit: c.cfg.InboxLimit, After: f.after}
	if f.kind == actoviq.InboxKindResume {
		p.Kind = ""
	}
	page, listErr := c.rt.Inbox(ctx, p)
	var cursorErr *actoviq.CursorError
	if errors.As(listErr, &cursorErr) {
		return nil, &badRequest{msg: cursorErr.Error()}
	}
	if listErr != nil && !errors.Is(listErr, actoviq.ErrData) {
		return nil, listErr
	}
	now := c.cfg.Clock()
	var items []InboxItem
	var problems []string
	if listErr != nil {
		problems = append(problems, listErr.Error())
	}
	for _, ir := range page.Runs {
		r := ir.Run
		switch r.Status {
		case actoviq.StatusInterrupted:
			for _, in := range ir.Interruptions {
				items = append(items, InboxItem{Kind: string(in.Kind), RunID: r.ID, AgentID: r.AgentID, CallID: in.CallID,
					Tool: in.Tool, Effect: in.Effect, State: string(in.State), Since: r.UpdatedAt, Reason: oneLine(in.Reason), Summary: argsSummary(in.Args), Approval: in.Approval})
			}
			if len(ir.Interruptions) == 0 {
				// Every question is answered: the run waits to be resumed.
				items = append(items, InboxItem{Kind: actoviq.InboxKindResume, RunID: r.ID, AgentID: r.AgentID, Since: r.UpdatedAt,
					Reason: "every open question is decided; the run waits to be resumed"})
			}
		case actoviq.StatusStalled:
			reason := "its worker stopped (the claim expired or its process died)"
			if h := r.Holder; h != nil && h.Host != "" {
				state := "its claim expired"
				if h.Dead {
					state = "its process is gone"
				}
				reason = fmt.Sprintf("its worker %s pid %d stopped (%s)", h.Host, h.PID, state)
			}
			items = append(items, InboxItem{Kind: actoviq.InboxKindStalled, RunID: r.ID, AgentID: r.AgentID, Since: r.UpdatedAt,
				Reason: reason + "; resume it to apply the recovery rules"})
		}
	}
	out := &Inbox{Items: []InboxItem{}, Kinds: []string{}, Agents: []string{}, Tools: []string{},
		Totals: page.Totals, Total: page.Total, Runs: len(page.Runs), Next: page.Next}
	kinds, agents, tools := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for k := range page.Totals {
		kinds[k] = true
	}
	if f.kind != "" {
		kinds[f.kind] = true
	}
	for i := range items {
		it := &items[i]
		it.AgeSeconds = int64(now.Sub(it.Since) / time.Second)
		kinds[it.Kind], agents[it.AgentID] = true, true
		if it.Tool != "" {
			tools[it.Tool] = true
		}
		if (f.kind != actoviq.InboxKindResume || it.Kind == f.kind) && (f.tool == "" || it.Tool == f.tool) {
			out.Items = append(out.Items, *it)
		}
	}
	if f.agent != "" {
		agents[f.agent] = true
	}
	out.Kinds, out.Agents, out.Tools = sorted(kinds), sorted(agents), sorted(tools)
	if page.Next != "" || f.after != "" {
		// Under a kind filter the pages hold that kind only: the count
		// is of that kind (the inbox's total beside it), not the whole
		// inbox's, which read as if every waiting run matched.
		all := fmt.Sprintf("%d runs wait in all", page.Total)
		if n, ok := page.Totals[f.kind]; ok && f.kind != actoviq.InboxKindResume {
			all = fmt.Sprintf("%d runs wait for %s (%d in the inbox)", n, f.kind, page.Total)
		}
		if f.agent != "" {
			all += ", counted over every agent"
		}
		out.Cut = fmt.Sprintf("this page shows %d runs; %s", len(page.Runs), all)
		if page.Next != "" {
			out.Cut += "; more on the next page"
		}
	}
	if f.tool != "" || f.kind == actoviq.InboxKindResume {
		what := "tool " + f.tool
		if f.tool == "" {
			what = "kind " + actoviq.InboxKindResume
		} else if f.kind == actoviq.InboxKindResume {
			what += " and kind " + actoviq.InboxKindResume
		}
		out.Narrowed = fmt.Sprintf("the filter on %s applies to the %d runs of this page only (%d items match)", what, len(page.Runs), len(out.Items))
		if page.Next != "" {
			out.Narrowed += "; later pages may hold more"
		}
	}
	if len(problems) > 0 {
		out.Warning = "some runs could not be read: " + strings.Join(problems, "; ")
	}
	return out, nil
}

// badRequest is an inbox request the console refuses (a cursor it did not
// hand out).
type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

func sorted(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (c *Console) apiInbox(w http.ResponseWriter, r *http.Request) {
	in, err := c.inbox(r.Context(), filterFrom(r))
	var bad *badRequest
	if errors.As(err, &bad) {
		writeError(w, http.StatusBadRequest, "bad_request", bad.msg)
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, in)
}

// stampRefresh is how many ticks of an unchanged stamp a live inbox waits
// before it recomputes its page anyway.
const stampRefresh = 30

// apiInboxStream sends the inbox as server-sent events: one "inbox" event
// at once, then one whenever it changes. Ages are left out of the
// comparison so that an unchanged inbox stays quiet; the page ages items
// itself.
func (c *Console) apiInboxStream(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "internal", "the server cannot stream")
		return
	}
	f := filterFrom(r)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	ctx := r.Context()
	ticker := time.NewTicker(c.cfg.PollInterval)
	defer ticker.Stop()
	// With a store that stamps what waits (store.WaitingStamper), a tick
	// costs one tiny query while nothing changed; the page is recomputed
	// when the stamp moves, and every stampRefresh ticks anyway (what a
	// stamp cannot see: a process of this host that died holding a claim).
	ws, _ := c.rt.Store().(store.WaitingStamper)
	var last []byte
	var lastStamp string
	for n := 0; ; n++ {
		if ws != nil {
			stamp, err := ws.WaitingStamp(ctx, c.rt.Tenant(), time.Time{})
			same := err == nil && n > 0 && n%stampRefresh != 0 && stamp == lastStamp
			if err == nil {
				lastStamp = stamp
			}
			if same {
				if n%15 == 0 {
					fmt.Fprint(w, ": still here\n\n")
					fl.Flush()
				}
				select {
				case <-ctx.Done():
					return
				case <-c.ctx.Done():
					return
				case <-ticker.C:
				}
				continue
			}
		}
		c.inboxComputed.Add(1)
		in, err := c.sharedInbox(ctx, f)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			fmt.Fprintf(w, "event: problem\ndata: %s\n\n", mustJSON(&Error{Code: "internal", Message: err.Error()}))
		} else {
			key := mustJSON(stripAges(in))
			if !bytes.Equal(key, last) {
				last = key
				fmt.Fprintf(w, "event: inbox\ndata: %s\n\n", mustJSON(in))
			} else if n%15 == 0 {
				fmt.Fprint(w, ": still here\n\n")
			}
		}
		fl.Flush()
		select {
		case <-ctx.Done():
			return
		case <-c.ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func stripAges(in *Inbox) *Inbox {
	cp := *in
	cp.Items = append([]InboxItem(nil), in.Items...)
	for i := range cp.Items {
		cp.Items[i].AgeSeconds = 0
	}
	return &cp
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(&Error{Code: "internal", Message: err.Error()})
	}
	return b
}

// inboxFlight is one inbox computation that every live stream with the
// same filter waiting at the time shares.
type inboxFlight struct {
	done chan struct{}
	in   *Inbox
	err  error
}

// sharedInbox is the inbox for the live streams: however many are open,
// one computation per filter runs at a time and the streams that ask
// meanwhile share the next result. Each computation is one page (a fixed
// number of store queries). It runs on the console's context, so one
// stream going away does not cancel the others' read.
func (c *Console) sharedInbox(ctx context.Context, f inboxFilter) (*Inbox, error) {
	c.mu.Lock()
	if err := c.ctx.Err(); err != nil {
		c.mu.Unlock()
		return nil, err
	}
	if c.inboxFlights == nil {
		c.inboxFlights = map[inboxFilter]*inboxFlight{}
	}
	fl := c.inboxFlights[f]
	if fl == nil {
		fl = &inboxFlight{done: make(chan struct{})}
		c.inboxFlights[f] = fl
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			fl.in, fl.err = c.inbox(c.ctx, f)
			c.mu.Lock()
			delete(c.inboxFlights, f)
			c.mu.Unlock()
			close(fl.done)
		}()
	}
	c.mu.Unlock()
	select {
	case <-fl.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return fl.in, fl.err
}
