package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/approvals"
)

// Error is the body of every JSON error response.
type Error struct {
	// Code is stable and meant for programs: unauthorized, csrf,
	// too_many_failures, bad_request, bad_json, operator_required,
	// operator_mismatch, not_found, unknown_call, decision_conflict,
	// run_finished, run_held, agent_changed, resume_elsewhere, not_allowed
	// (the approvals policy refused the decision), internal.
	Code string `json:"code"`
	// Message is for people: what was looked at and what to do next.
	Message string `json:"message"`
	// CallID names the decision that did not fit, when one did not.
	CallID string `json:"call_id,omitempty"`
	// Command is how to resume the run elsewhere (resume_elsewhere).
	Command string `json:"command,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, &Error{Code: code, Message: msg})
}

const maxBody = 1 << 20

// decodeBody reads a JSON body strictly: one object, known fields only.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		writeError(w, http.StatusUnsupportedMediaType, "bad_request", "send the body as application/json")
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "bad_json", "the request body is not the JSON this endpoint takes: "+err.Error())
		return false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "bad_json", "the request body has more than one JSON value")
		return false
	}
	return true
}

// notFound answers for an unknown run, and for another tenant's run in the
// same words: nothing says whether the id exists elsewhere.
func (c *Console) notFound(w http.ResponseWriter, id string) {
	writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no run %q in tenant %q", id, c.rt.Tenant()))
}

func (c *Console) storeError(w http.ResponseWriter, id string, err error) {
	if errors.Is(err, actoviq.ErrNotFound) {
		c.notFound(w, id)
		return
	}
	writeError(w, http.StatusInternalServerError, "internal", err.Error())
}

var statuses = []string{"queued", "running", "stalled", "interrupted", "completed", "failed", "cancelled"}

func validStatus(s string) bool {
	for _, v := range statuses {
		if s == v {
			return true
		}
	}
	return s == ""
}

// listRuns lists one page of runs with a status filter (applied by the
// store) and returns the cursor of the next page. A search over run id and
// agent id (substring, case-insensitive) has no index: it reads the runs
// page by page, newest first, until it has found limit matches or has
// read searchScan runs, and says where it stopped (the cursor).
func (c *Console) listRuns(ctx context.Context, status, q string, limit int, after string) ([]*actoviq.RunInfo, string, error) {
	p := &actoviq.ListParams{Status: actoviq.Status(status), Limit: limit, After: after}
	if q == "" {
		page, err := c.rt.ListPage(ctx, p)
		if err != nil && !errors.Is(err, actoviq.ErrData) {
			return nil, "", err
		}
		return page.Runs, page.Next, nil
	}
	q = strings.ToLower(q)
	out := []*actoviq.RunInfo{}
	p.Limit = 200
	for read := 0; read < searchScan; {
		page, err := c.rt.ListPage(ctx, p)
		if err != nil && !errors.Is(err, actoviq.ErrData) {
			return nil, "", err
		}
		for i, r := range page.Runs {
			if strings.Contains(strings.ToLower(r.ID), q) || strings.Contains(strings.ToLower(r.AgentID), q) {
				out = append(out, r)
				if limit > 0 && len(out) == limit {
					if i == len(page.Runs)-1 {
						return out, page.Next, nil
					}
					return out, actoviq.CursorAfter(r), nil
				}
			}
		}
		read += len(page.Runs)
		if page.Next == "" {
			return out, "", nil
		}
		p.After = page.Next
	}
	return out, p.After, nil
}

// searchScan is how many runs one search request reads at most.
const searchScan = 10000

func (c *Console) apiRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	status := q.Get("status")
	if !validStatus(status) {
		writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("status %q: want one of %s", status, strings.Join(statuses, ", ")))
		return
	}
	limit := 100
	if s := q.Get("limit"); s != "" {
		if _, err := fmt.Sscanf(s, "%d", &limit); err != nil || limit < 0 {
			writeError(w, http.StatusBadRequest, "bad_request", "limit must be a number ≥ 0 (0: all)")
			return
		}
	}
	runs, next, err := c.listRuns(r.Context(), status, q.Get("q"), limit, q.Get("after"))
	var cursorErr *actoviq.CursorError
	if errors.As(err, &cursorErr) {
		writeError(w, http.StatusBadRequest, "bad_request", cursorErr.Error())
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	out := make([]actoviq.RunInfo, 0, len(runs))
	for _, ri := range runs {
		out = append(out, shown(ri))
	}
	body := map[string]any{"runs": out}
	if next != "" {
		// The list is cut: "next" is the after= of the next page.
		body["next"] = next
		body["cut"] = true
	}
	writeJSON(w, http.StatusOK, body)
}

// treeOf reads the run's descendants, level by level (one list of
// children per run in the tree, through the store's parent index): the
// run page reads only the tree it draws.
func (c *Console) treeOf(ctx context.Context, root string) ([]*actoviq.RunInfo, error) {
	var all []*actoviq.RunInfo
	seen := map[string]bool{root: true}
	queue := []string{root}
	for len(queue) > 0 && len(all) < maxTree {
		id := queue[0]
		queue = queue[1:]
		kids, err := c.rt.List(ctx, &actoviq.ListParams{ParentID: id, Limit: maxTree})
		if err != nil && !errors.Is(err, actoviq.ErrData) {
			return nil, err
		}
		for _, k := range kids {
			if !seen[k.ID] {
				seen[k.ID] = true
				all = append(all, k)
				queue = append(queue, k.ID)
			}
		}
	}
	return all, nil
}

// maxTree bounds the runs the run page's tree shows.
const maxTree = 1000

// runView reads everything the run page shows.
func (c *Console) runView(ctx context.Context, id string) (*Run, error) {
	info, err := c.rt.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	evs, err := c.rt.Events(ctx, id, nil)
	if err != nil {
		return nil, err
	}
	all, err := c.treeOf(ctx, info.ID)
	if err != nil {
		return nil, err
	}
	v := &Run{RunInfo: shown(info), Ledger: callsOf(info), Audit: auditOf(info), Events: evs, Children: childTree(info.ID, all),
		Resume: c.resumeInfo(ctx, info), CancelTask: c.cfg.CancelTask != nil, Undecided: undecided(info.Interruptions)}
	v.Tasks = tasksOf(v.Ledger, evs)
	v.Attempts = actoviq.AttemptsFromEvents(evs)
	v.LastDriver = lastDriver(evs, info.Holder)
	v.Events = eventsShown(evs)
	if v.Audit == nil {
		v.Audit = []AuditEntry{}
	}
	if v.Events == nil {
		v.Events = []actoviq.Event{}
	}
	return v, nil
}

func (c *Console) apiRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	v, err := c.runView(r.Context(), id)
	if err != nil {
		c.storeError(w, id, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// DecisionRequest is one decision in POST /api/v1/runs/{id}/decisions.
type DecisionRequest struct {
	// CallID names the call in the run.
	CallID string `json:"call_id"`
	// Kind is approve, reject, committed, failed, reexecute or answer.
	Kind string `json:"kind"`
	// Note is recorded and never shown to the model.
	Note string `json:"note,omitempty"`
	// Reason: for reject, what the model is told (required).
	Reason string `json:"reason,omitempty"`
	// Result: for committed, the call's result as a JSON value (required).
	// A JSON string is the text the model sees; any other value is shown
	// to the model as JSON and kept as structured data.
	Result json.RawMessage `json:"result,omitempty"`
	// Message: for failed, what the model sees (required).
	Message string `json:"message,omitempty"`
	// Answer: for answer, a person's answer to an input interruption (a
	// JSON object, as its question's schema asks; required).
	Answer json.RawMessage `json:"answer,omitempty"`
	// By names the operator. Only for a bearer token bound to no name;
	// otherwise the session's or the token's name is recorded.
	By string `json:"by,omitempty"`
	// ShownAt is when the operator was shown the call (the page's time);
	// recorded with what was shown. Optional.
	ShownAt time.Time `json:"shown_at,omitzero"`
	// ShownDigest is the digest of the arguments shown
	// (actoviq.ArgsRenderingDigest); a decision on other arguments than
	// the call's is refused. Optional.
	ShownDigest string `json:"shown_digest,omitempty"`
}

type decisionsBody struct {
	DecisionRequest
	Decisions []DecisionRequest `json:"decisions,omitempty"`
}

// DecisionsResponse answers a recorded set of decisions.
type DecisionsResponse struct {
	// RunID names the run.
	RunID string `json:"run_id"`
	// Recorded are the call ids decided, in order.
	Recorded []string `json:"recorded"`
	// By is the operator name the decisions were recorded under.
	By string `json:"by"`
	// Next says what happens now.
	Next string `json:"next"`
	// Resume says how the run can be continued now.
	Resume ResumeInfo `json:"resume"`
}

func toDecision(d *DecisionRequest, by string) (actoviq.Decision, error) {
	out := actoviq.Decision{CallID: d.CallID, By: by, Note: d.Note, ShownAt: d.ShownAt, ShownDigest: d.ShownDigest}
	if d.CallID == "" {
		return out, errors.New("call_id is required")
	}
	switch d.Kind {
	case "approve":
		out.Kind, out.Reason = actoviq.DecideApprove, d.Reason
	case "reject":
		if strings.TrimSpace(d.Reason) == "" {
			return out, errors.New("reject needs a reason (the model sees it)")
		}
		out.Kind, out.Reason = actoviq.DecideReject, d.Reason
	case "committed":
		res := bytes.TrimSpace(d.Result)
		if len(res) == 0 || bytes.Equal(res, []byte("null")) {
			return out, errors.New(`committed needs a result: the call's result as JSON, e.g. "payment p-77" or {"payment_id":"p-77"}`)
		}
		var s string
		if json.Unmarshal(res, &s) == nil {
			out.Result = s
		} else {
			out.Result, out.ResultData = string(res), json.RawMessage(res)
		}
		out.Kind, out.Reason = actoviq.DecideCommitted, d.Reason
	case "failed":
		if strings.TrimSpace(d.Message) == "" {
			return out, errors.New("failed needs a message (the model sees it)")
		}
		out.Kind, out.Message, out.Reason = actoviq.DecideFailed, d.Message, d.Reason
	case "reexecute", "re-execute":
		out.Kind, out.Reason = actoviq.DecideReexecute, d.Reason
	case "answer":
		out.Kind, out.Answer, out.Reason = actoviq.DecideAnswer, d.Answer, d.Reason
	default:
		return out, fmt.Errorf("kind %q: want approve, reject, committed, failed, reexecute or answer", d.Kind)
	}
	if d.Kind != "answer" && len(d.Answer) > 0 {
		return out, errors.New("answer goes with kind answer only")
	}
	if d.Kind != "committed" && len(d.Result) > 0 {
		return out, errors.New("result goes with committed only")
	}
	if d.Kind != "failed" && d.Message != "" {
		return out, errors.New("message goes with failed only")
	}
	return out, out.Validate()
}

func (c *Console) operatorFor(w http.ResponseWriter, r *http.Request, by []string) (string, bool) {
	p := principalOf(r.Context())
	given := ""
	for _, b := range by {
		if b != "" {
			if given != "" && b != given {
				writeError(w, http.StatusBadRequest, "bad_request", "all decisions of one request are made by one operator")
				return "", false
			}
			given = b
		}
	}
	if p.operator != "" {
		if given != "" && given != p.operator {
			writeError(w, http.StatusForbidden, "operator_mismatch", fmt.Sprintf("you are signed in as %q; decisions are recorded under that name", p.operator))
			return "", false
		}
		return p.operator, true
	}
	if given == "" {
		writeError(w, http.StatusBadRequest, "operator_required", `this token is bound to no name: give the operator's name in "by"`)
		return "", false
	}
	if err := checkOperator(given); err != nil {
		writeError(w, http.StatusBadRequest, "operator_required", "by: "+err.Error())
		return "", false
	}
	return given, true
}

func (c *Console) apiDecisions(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body decisionsBody
	if !decodeBody(w, r, &body) {
		return
	}
	reqs := body.Decisions
	single := body.DecisionRequest.CallID != "" || body.DecisionRequest.Kind != ""
	switch {
	case single && len(reqs) > 0:
		writeError(w, http.StatusBadRequest, "bad_request", `send one decision, or {"decisions": [...]}, not both`)
		return
	case single:
		reqs = []DecisionRequest{body.DecisionRequest}
	case len(reqs) == 0:
		writeError(w, http.StatusBadRequest, "bad_request", `no decision: send {"call_id", "kind", ...} or {"decisions": [...]}`)
		return
	}
	var by []string
	for _, d := range reqs {
		by = append(by, d.By)
	}
	op, ok := c.operatorFor(w, r, by)
	if !ok {
		return
	}
	info, err := c.rt.Get(r.Context(), id)
	if err != nil {
		c.storeError(w, id, err)
		return
	}
	// A call is the run's own, or one of its children's that the run's
	// page lists as open (Runtime.Decide records that one on the child).
	calls := map[string]bool{}
	for _, en := range info.Ledger {
		calls[en.CallID] = true
	}
	for _, in := range info.Interruptions {
		if in.RunID != "" && in.RunID != id {
			calls[in.CallID] = true
		}
	}
	decs := make([]actoviq.Decision, 0, len(reqs))
	for _, d := range reqs {
		dec, err := toDecision(&d, op)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, &Error{Code: "bad_request", Message: err.Error(), CallID: d.CallID})
			return
		}
		if !calls[d.CallID] {
			writeJSON(w, http.StatusNotFound, &Error{Code: "unknown_call", Message: fmt.Sprintf("run %s has no call %q", id, d.CallID), CallID: d.CallID})
			return
		}
		decs = append(decs, dec)
	}
	if err := c.rt.Decide(r.Context(), id, decs...); err != nil {
		var de *actoviq.DecisionError
		var refused *approvals.RefusedError
		switch {
		case errors.As(err, &refused):
			writeJSON(w, http.StatusForbidden, &Error{Code: "not_allowed", CallID: refused.Call.CallID,
				Message: "Not recorded: " + refused.Error() + ". Ask someone the approvals policy names."})
		case errors.As(err, &de):
			writeJSON(w, http.StatusConflict, &Error{Code: "decision_conflict", CallID: de.CallID,
				Message: "this decision no longer fits the run (someone may have decided first): " + de.Reason + "; reload the run to see its ledger now"})
		case errors.Is(err, actoviq.ErrRunFinished):
			writeError(w, http.StatusConflict, "run_finished", fmt.Sprintf("run %s already ended; nothing can be decided on it", id))
		case errors.Is(err, actoviq.ErrRunHeld), errors.Is(err, actoviq.ErrConflict), errors.Is(err, actoviq.ErrFenced):
			writeError(w, http.StatusConflict, "run_held", fmt.Sprintf("run %s is being driven or changed right now; reload it and decide again if it still waits", id))
		default:
			c.storeError(w, id, err)
		}
		return
	}
	resp := DecisionsResponse{RunID: id, By: op, Resume: c.resumeInfo(r.Context(), info)}
	for _, d := range decs {
		resp.Recorded = append(resp.Recorded, d.CallID)
	}
	switch {
	case info.Status == actoviq.StatusCompleted || info.Status == actoviq.StatusFailed || info.Status == actoviq.StatusCancelled:
		resp.Next = fmt.Sprintf("The run is %s and does not continue; the outcome is kept in its audit trail.", info.Status)
	case resp.Resume.Available:
		resp.Next = "Nothing runs until the run is resumed: resume it here when every open question is answered."
	case resp.Resume.Command != "":
		resp.Next = "Nothing runs until the run is resumed: " + resp.Resume.Command
	default:
		resp.Next = "Nothing runs until the run is resumed. " + resp.Resume.Description
	}
	writeJSON(w, http.StatusOK, resp)
}

// ResumeResponse answers POST /api/v1/runs/{id}/resume.
type ResumeResponse struct {
	// RunID names the run.
	RunID string `json:"run_id"`
	// Status is the run's status when the answer was written: "running"
	// (202: the drive goes on) or where the drive stopped.
	Status string `json:"status"`
	// Interruptions are the open questions when the drive stopped interrupted.
	Interruptions []actoviq.Interruption `json:"interruptions,omitempty"`
	// Error says why the run failed, when it did.
	Error *actoviq.RunError `json:"error,omitempty"`
}

func (c *Console) apiResume(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	// The body, if any, must be empty or {}.
	var empty struct{}
	if r.ContentLength != 0 && !decodeBody(w, r, &empty) {
		return
	}
	info, err := c.rt.Get(r.Context(), id)
	if err != nil {
		c.storeError(w, id, err)
		return
	}
	if s := info.Status; s == actoviq.StatusCompleted || s == actoviq.StatusFailed || s == actoviq.StatusCancelled {
		writeError(w, http.StatusConflict, "run_finished", fmt.Sprintf("run %s is %s; it cannot be resumed", id, s))
		return
	}
	offer := c.resumeInfo(r.Context(), info)
	switch offer.Via {
	case "queue":
		if err := c.rt.Requeue(r.Context(), id); err != nil {
			switch {
			case errors.Is(err, actoviq.ErrRunHeld):
				writeError(w, http.StatusConflict, "run_held", err.Error()+": wait for that worker, or cancel the run")
			case errors.Is(err, actoviq.ErrRunFinished):
				writeError(w, http.StatusConflict, "run_finished", err.Error())
			default:
				c.storeError(w, id, err)
			}
			return
		}
		writeJSON(w, http.StatusOK, &ResumeResponse{RunID: id, Status: string(actoviq.StatusQueued)})
		return
	case "command":
		writeJSON(w, http.StatusNotImplemented, &Error{Code: "resume_elsewhere", Command: offer.Command,
			Message: "this console does not resume this run itself; resume it with: " + offer.Command})
		return
	case "program":
		writeJSON(w, http.StatusNotImplemented, &Error{Code: "resume_elsewhere", Message: offer.Description})
		return
	}
	done, started := c.startResume(id)
	if !started {
		writeError(w, http.StatusConflict, "run_held", fmt.Sprintf("this console is already resuming run %s; wait for it", id))
		return
	}
	timer := time.NewTimer(c.cfg.ResumeWait)
	defer timer.Stop()
	var res resumeResult
	select {
	case res = <-done:
	case <-timer.C:
		writeJSON(w, http.StatusAccepted, &ResumeResponse{RunID: id, Status: "running"})
		return
	case <-r.Context().Done():
		return
	}
	if res.err != nil {
		switch {
		case errors.Is(res.err, ErrCannotResume):
			writeJSON(w, http.StatusNotImplemented, &Error{Code: "resume_elsewhere", Command: c.cfg.ResumeCommand(id),
				Message: res.err.Error() + "; resume it with: " + c.cfg.ResumeCommand(id)})
		case errors.Is(res.err, actoviq.ErrRunHeld):
			writeError(w, http.StatusConflict, "run_held", res.err.Error()+": wait for that worker, or cancel the run")
		case errors.Is(res.err, actoviq.ErrRunFinished):
			writeError(w, http.StatusConflict, "run_finished", res.err.Error())
		case errors.Is(res.err, actoviq.ErrAgentChanged), errors.Is(res.err, actoviq.ErrDigestMismatch):
			writeError(w, http.StatusConflict, "agent_changed", res.err.Error()+"; resume it from the program that owns the new agent, accepting the change there if it is right")
		default:
			c.storeError(w, id, res.err)
		}
		return
	}
	writeJSON(w, http.StatusOK, &ResumeResponse{RunID: id, Status: string(res.res.Status), Interruptions: interruptionsShown(res.res.Interruptions), Error: res.res.Error})
}

type resumeResult struct {
	res *actoviq.RunResult
	err error
}

// startResume drives the run in the background, on the console's context,
// so that a browser closing its tab does not cancel a drive in the middle.
func (c *Console) startResume(id string) (<-chan resumeResult, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, busy := c.resumes[id]; busy {
		return nil, false
	}
	if c.ctx.Err() != nil {
		ch := make(chan resumeResult, 1)
		ch <- resumeResult{err: errors.New("console: closed")}
		return ch, true
	}
	stop := make(chan struct{})
	c.resumes[id] = stop
	out := make(chan resumeResult, 1)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		res, err := c.cfg.Resume(c.ctx, id)
		if err == nil && res == nil {
			err = errors.New("console: Config.Resume returned no result")
		}
		out <- resumeResult{res, err}
		c.mu.Lock()
		delete(c.resumes, id)
		c.mu.Unlock()
		close(stop)
	}()
	return out, true
}

func errorsIsNotFound(err error) bool { return errors.Is(err, actoviq.ErrNotFound) }

// resumeInfo offers only what works for the run: this console's Resume
// when it can drive the run, else the workers' queue when a worker serves
// its agent, else the command, else its own program.
func (c *Console) resumeInfo(ctx context.Context, info *actoviq.RunInfo) ResumeInfo {
	why := ""
	if c.cfg.Resume != nil {
		if c.cfg.CanResume == nil {
			return ResumeInfo{Available: true, Via: "here", Description: c.cfg.ResumeDescription, Command: c.cfg.ResumeCommand(info.ID)}
		}
		err := c.cfg.CanResume(ctx, info)
		if err == nil {
			return ResumeInfo{Available: true, Via: "here", Description: c.cfg.ResumeDescription, Command: c.cfg.ResumeCommand(info.ID)}
		}
		why = "This console cannot resume it (" + err.Error() + "). "
	}
	if w, err := c.rt.AgentServed(ctx, info.AgentID); err == nil && w != nil {
		return ResumeInfo{Available: true, Via: "queue", Command: c.cfg.ResumeCommand(info.ID),
			Description: fmt.Sprintf("Resuming hands the run to the workers' queue: a worker serving agent %s (%s) continues it, applying the recorded decisions and the recovery rules; nothing committed runs again.", info.AgentID, w.HolderInfo)}
	}
	if cmd := c.cfg.ResumeCommand(info.ID); cmd != "" {
		return ResumeInfo{Via: "command", Command: cmd, Description: why + "After deciding, continue the run with:"}
	}
	return ResumeInfo{Via: "program", Description: fmt.Sprintf("%sRun %s was started by a program with agent %s, and no worker serving that agent is running: that program resumes it (Runtime.Resume), or a worker that registers the agent takes it from the queue.", why, info.ID, info.AgentID)}
}

// CancelTaskResponse answers a cancel of an MCP task.
type CancelTaskResponse struct {
	// RunID and CallID name the call whose task it is.
	RunID string `json:"run_id"`
	// CallID names the call.
	CallID string `json:"call_id"`
	// Server and TaskID name the task.
	Server string `json:"server"`
	// TaskID is the server's task id.
	TaskID string `json:"task_id"`
	// By is the operator the note was recorded under.
	By string `json:"by"`
	// Next says what happens now.
	Next string `json:"next"`
}

// apiCancelTask sends tasks/cancel, once, for the MCP task a call of the run
// recorded, and records that (with its outcome) as a note on the call.
func (c *Console) apiCancelTask(w http.ResponseWriter, r *http.Request) {
	id, callID := r.PathValue("id"), r.PathValue("call")
	var body struct {
		By string `json:"by,omitempty"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	op, ok := c.operatorFor(w, r, []string{body.By})
	if !ok {
		return
	}
	v, err := c.runView(r.Context(), id)
	if err != nil {
		c.storeError(w, id, err)
		return
	}
	var task *Task
	for i := range v.Tasks {
		if v.Tasks[i].CallID == callID {
			task = &v.Tasks[i]
		}
	}
	if task == nil {
		writeJSON(w, http.StatusNotFound, &Error{Code: "unknown_task", CallID: callID,
			Message: fmt.Sprintf("call %q of run %s holds no MCP task that is still open", callID, id)})
		return
	}
	if c.cfg.CancelTask == nil {
		writeError(w, http.StatusConflict, "cannot_cancel", fmt.Sprintf(
			"this console has no MCP servers' configuration; cancel it with: actoviq mcp cancel-task %s %s --run %s --call %s", task.Server, task.TaskID, id, callID))
		return
	}
	sent := c.cfg.CancelTask(r.Context(), task.Server, task.TaskID)
	text := fmt.Sprintf("tasks/cancel sent for MCP task %s on server %s: acknowledged", task.TaskID, task.Server)
	if sent != nil {
		text = fmt.Sprintf("tasks/cancel sent for MCP task %s on server %s: failed: %v", task.TaskID, task.Server, sent)
	}
	if err := c.rt.NoteCall(r.Context(), id, callID, actoviq.CallNote{By: op, Text: text}); err != nil {
		msg := "the cancel was sent, but recording it failed: " + err.Error()
		if sent != nil {
			msg = "the cancel failed (" + sent.Error() + "), and recording that failed: " + err.Error()
		}
		writeError(w, http.StatusConflict, "not_recorded", msg)
		return
	}
	if sent != nil {
		writeJSON(w, http.StatusBadGateway, &Error{Code: "task_cancel_failed", CallID: callID, Message: text + " (recorded on the call)"})
		return
	}
	writeJSON(w, http.StatusOK, &CancelTaskResponse{RunID: id, CallID: callID, Server: task.Server, TaskID: task.TaskID, By: op,
		Next: "Cancellation is cooperative: the server may have done part of the work. The call's outcome stays unknown until it is settled (committed or failed)."})
}
