package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
)

var pageNames = []string{"login.html", "inbox.html", "runs.html", "run.html"}

func parseTemplates() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"ago":     ago,
		"inc":     func(n int) int { return n + 1 },
		"stamp":   stamp,
		"json":    prettyJSON,
		"summary": itemSummary,
		"event":   eventLine,
		"canDecide": func(kind actoviq.InterruptionKind, decision string) bool {
			if kind == "unsettled" {
				return decision == "committed" || decision == "failed"
			}
			if kind == actoviq.InterruptApproval {
				return decision == "approve" || decision == "reject"
			}
			if kind == actoviq.InterruptInput {
				return decision == "answer"
			}
			return decision == "committed" || decision == "failed" || decision == "reexecute"
		},
		"unsettled": func(in actoviq.Interruption) actoviq.Interruption {
			in.Kind = "unsettled"
			return in
		},
		"holder": func(h string) string { return actoviq.ParseHolder(h).String() },
		"digest": func(args json.RawMessage) string {
			if len(args) == 0 {
				return ""
			}
			return actoviq.ArgsRenderingDigest(args)
		},
		"rfc3339": func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
		"join":    func(s []string) string { return strings.Join(s, ", ") },
		"minus":   func(a, b int) int { return a - b },
		"signers": signersText,
		"decided": decidedText,
		"terminal": func(status actoviq.Status) bool {
			return status == actoviq.StatusCompleted || status == actoviq.StatusFailed || status == actoviq.StatusCancelled
		},
	}
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/"+name)
		if err != nil {
			return nil, fmt.Errorf("console: templates: %w", err)
		}
		out[name] = t
	}
	return out, nil
}

func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, data map[string]any) {
	if data == nil {
		data = map[string]any{}
	}
	if p := principalOf(r.Context()); p != nil && p.session != nil {
		data["Operator"] = p.session.operator
		data["CSRF"] = p.session.csrf
	}
	data["Tenant"] = c.rt.Tenant()
	var buf bytes.Buffer
	if err := c.tmpl[name].ExecuteTemplate(&buf, "layout", data); err != nil {
		http.Error(w, "console: render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

func (c *Console) inboxPage(w http.ResponseWriter, r *http.Request) {
	f := filterFrom(r)
	in, err := c.inbox(r.Context(), f)
	var bad *badRequest
	if errors.As(err, &bad) {
		http.Error(w, bad.msg, http.StatusBadRequest)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	next := ""
	if in.Next != "" {
		q := url.Values{"after": {in.Next}}
		for k, v := range map[string]string{"kind": f.kind, "agent": f.agent, "tool": f.tool} {
			if v != "" {
				q.Set(k, v)
			}
		}
		next = "/?" + q.Encode()
	}
	c.render(w, r, http.StatusOK, "inbox.html", map[string]any{"Title": "Inbox", "Inbox": in, "Filter": map[string]string{
		"Kind": f.kind, "Agent": f.agent, "Tool": f.tool, "After": f.after}, "Now": c.cfg.Clock(), "NextPage": next,
		"TotalKinds": sorted(keysOf(in.Totals))})
}

func (c *Console) runsPage(w http.ResponseWriter, r *http.Request) {
	status, q := r.URL.Query().Get("status"), strings.TrimSpace(r.URL.Query().Get("q"))
	data := map[string]any{"Title": "Runs", "Status": status, "Q": q, "Statuses": statuses, "Now": c.cfg.Clock()}
	if !validStatus(status) {
		data["Error"] = fmt.Sprintf("Unknown status %q.", status)
		c.render(w, r, http.StatusBadRequest, "runs.html", data)
		return
	}
	runs, next, err := c.listRuns(r.Context(), status, q, 200, r.URL.Query().Get("after"))
	var cursorErr *actoviq.CursorError
	if errors.As(err, &cursorErr) {
		data["Error"] = cursorErr.Error()
		c.render(w, r, http.StatusBadRequest, "runs.html", data)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	data["Runs"] = runs
	if next != "" {
		v := url.Values{"after": {next}}
		if status != "" {
			v.Set("status", status)
		}
		if q != "" {
			v.Set("q", q)
		}
		data["NextPage"] = "/runs?" + v.Encode()
	}
	data["After"] = r.URL.Query().Get("after")
	c.render(w, r, http.StatusOK, "runs.html", data)
}

func (c *Console) runPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	v, err := c.runView(r.Context(), id)
	if err != nil {
		status := http.StatusInternalServerError
		msg := err.Error()
		if errorsIsNotFound(err) {
			status, msg = http.StatusNotFound, fmt.Sprintf("No run %q in tenant %q.", id, c.rt.Tenant())
		}
		c.render(w, r, status, "run.html", map[string]any{"Title": "Run " + id, "Error": msg})
		return
	}
	c.render(w, r, http.StatusOK, "run.html", map[string]any{"Title": "Run " + id, "Run": v, "Now": c.cfg.Clock()})
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

func prettyJSON(v any) string {
	var b []byte
	switch x := v.(type) {
	case json.RawMessage:
		if len(x) == 0 {
			return ""
		}
		var buf bytes.Buffer
		if json.Indent(&buf, x, "", "  ") == nil {
			return buf.String()
		}
		return string(x)
	default:
		b, _ = json.MarshalIndent(v, "", "  ")
	}
	return string(b)
}

func itemSummary(it item.Item) string {
	switch it.Type {
	case item.TypeText:
		return it.Text
	case item.TypeToolCall:
		if it.ToolCall != nil {
			return fmt.Sprintf("calls %s [%s] %s", it.ToolCall.Name, it.ToolCall.ID, it.ToolCall.Arguments)
		}
	case item.TypeToolResult:
		if it.ToolResult != nil {
			p := "result"
			if it.ToolResult.IsError {
				p = "error result"
			}
			return fmt.Sprintf("%s [%s]: %s", p, it.ToolResult.CallID, it.ToolResult.Content)
		}
	case item.TypeRefusal:
		return "refused: " + it.Text
	}
	b, _ := json.Marshal(it)
	return string(b)
}

// signersText names the approvers of an approval, in order.
func signersText(ss []store.Signoff) string {
	names := make([]string, 0, len(ss))
	for _, s := range ss {
		names = append(names, s.By)
	}
	return strings.Join(names, ", ")
}

// decidedText is the ledger table's "Decided" cell for an approval record.
func decidedText(d *store.DecisionRecord) string {
	by := d.By
	if len(d.Approvers) > 0 {
		by = signersText(d.Approvers)
	}
	s := d.Kind + " by " + by
	if d.Required > 1 {
		s += fmt.Sprintf(" (%d of %d)", len(d.Approvers), d.Required)
	}
	if !d.ExpiredAt.IsZero() {
		s += ", expired"
	}
	return s
}

// eventLine says in one line what an event recorded, from its typed
// payload; an event this build does not know gets its type alone.
func eventLine(ev actoviq.Event) string {
	data, err := ev.Payload()
	if err != nil {
		return "(payload does not decode: " + err.Error() + ")"
	}
	switch d := data.(type) {
	case *actoviq.RunStartedData:
		return fmt.Sprintf("driven by %s (epoch %d), agent %s, model %s", d.Holder, d.Epoch, d.AgentID, d.Model)
	case *actoviq.RunEndedData:
		s := string(d.Status)
		if d.Error != nil {
			s += ": " + d.Error.Error()
		}
		if n := len(d.Interruptions); n > 0 {
			s += fmt.Sprintf(", %d open question(s)", n)
		}
		return s
	case *actoviq.ModelResponseData:
		return fmt.Sprintf("turn %d, %d item(s), stop %s, %d in / %d out tokens", d.Turn, len(d.Items), d.StopReason, d.Usage.InputTokens, d.Usage.OutputTokens)
	case *actoviq.ToolCallData:
		return fmt.Sprintf("%s %s (%s) → %s, attempt %d, key %s", d.Tool, d.CallID, d.Effect, d.State, d.Attempt, d.IdempotencyKey)
	case *actoviq.ApprovalSignedData:
		return fmt.Sprintf("%s approved %s %s: %d of %d approvers (%s)", d.By, d.Tool, d.CallID, len(d.Approvers), d.Required, strings.Join(d.Approvers, ", "))
	case *actoviq.ApprovalExpiredData:
		return fmt.Sprintf("the approval of %s %s by %s expired at %s before the call started; it asks again", d.Tool, d.CallID, strings.Join(d.Approvers, ", "), stamp(d.ExpiresAt))
	case *actoviq.ApprovalEscalatedData:
		s := fmt.Sprintf("%s %s waited for approval since %s (decide by %s)", d.Tool, d.CallID, stamp(d.WaitingSince), stamp(d.DecideBy))
		if len(d.EscalateTo) > 0 {
			s += "; escalated to " + strings.Join(d.EscalateTo, ", ")
		}
		return s
	case *actoviq.ToolProbedData:
		s := fmt.Sprintf("probe of %s answered %s", d.CallID, d.Outcome)
		if d.Evidence != "" {
			s += ": " + d.Evidence
		}
		if d.Error != "" {
			s += " (error: " + d.Error + ")"
		}
		return s
	}
	return ""
}

func keysOf(m map[string]int64) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}
