package httptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/actoviq/actoviq-go/tool"
)

// NewTool returns a typed tool whose call sends one HTTP request through c:
// request builds it from the arguments (it must not set the idempotency
// key header: c sets the call's own), and decode reads a 2xx answer into
// Out. A nil decode decodes the body as JSON (for a string Out, the body is
// the text). Schemas are derived as by [tool.Func].
//
// What the model sees and what the ledger records follow [Client.Do]: a
// 2xx is the result (marked, for the model, when the target replayed it);
// a rejection is an error result; an in-progress answer, a reused key, a
// timeout, a broken connection or a 5xx leave the call's outcome unknown.
// A 2xx whose answer decode cannot read is an unknown outcome too: the
// target acted, and there is no result to record.
//
// When c's target dedupes ([Config.Dedupes]), the tool also implements
// [tool.Reconciler]: after a crash, or an unknown outcome, recovery sends
// the same request again with the call's key, and the target's answer
// settles the call (a 2xx committed, replayed or not; a rejection of the
// request's content committed as the error result the model would have
// seen; a refusal of the re-sent request itself, 401, 403, 407, 408, 425
// or 429, and anything else to a person, with what was seen as the
// probe's evidence). It sends again only
// while the call's last attempt started less than [Config.KeyWindow] ago;
// past that the target may have forgotten the key, and the probe leaves
// the call to a person without sending anything. Without that
// declaration the tool has no probe, and an unknown outcome waits for a
// person, as for any side effect.
func NewTool[In, Out any](spec tool.Spec, c *Client, request func(ctx context.Context, in In) (*http.Request, error), decode func(*Response) (Out, error)) (tool.Tool, error) {
	if c == nil {
		return nil, fmt.Errorf("httptool: tool %s: nil Client", spec.Name)
	}
	if request == nil {
		return nil, fmt.Errorf("httptool: tool %s: nil request function", spec.Name)
	}
	if decode == nil {
		decode = decodeJSON[Out]
	}
	h := &httpTool[In, Out]{c: c, request: request, decode: decode}
	h.inner = tool.Func(spec, h.call)
	derived := h.inner.Spec()
	if len(spec.InputSchema) == 0 && len(derived.InputSchema) == 0 || len(spec.OutputSchema) == 0 && len(derived.OutputSchema) == 0 {
		// tool.Func could not derive a schema; its Call returns why
		// without calling anything.
		_, err := h.inner.Call(context.Background(), nil)
		return nil, fmt.Errorf("httptool: %w", err)
	}
	if c.cfg.Dedupes {
		return &dedupingTool[In, Out]{h}, nil
	}
	return h, nil
}

func decodeJSON[Out any](res *Response) (Out, error) {
	var out Out
	if p, ok := any(&out).(*string); ok {
		*p = string(res.Body)
		return out, nil
	}
	if res.Truncated {
		return out, fmt.Errorf("the answer is longer than Config.MaxBody (%d bytes)", len(res.Body))
	}
	if err := json.Unmarshal(res.Body, &out); err != nil {
		return out, fmt.Errorf("decode the answer as JSON: %w", err)
	}
	return out, nil
}

type httpTool[In, Out any] struct {
	c       *Client
	request func(context.Context, In) (*http.Request, error)
	decode  func(*Response) (Out, error)
	inner   tool.Tool
}

type replayedKey struct{}

// Spec implements [tool.Tool].
func (h *httpTool[In, Out]) Spec() tool.Spec { return h.inner.Spec() }

// Call implements [tool.Tool].
func (h *httpTool[In, Out]) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	var replayed bool
	r, err := h.inner.Call(context.WithValue(ctx, replayedKey{}, &replayed), args)
	if err == nil && replayed {
		r.Content += "\n" + replayNote
	}
	return r, err
}

// replayNote tells the model that the answer is the target's record of an
// earlier request with this call's key.
const replayNote = "(The service answered from its record of an earlier request with this call's idempotency key: nothing was done twice.)"

// send is one request and its answer, shared by the call and the probe.
func (h *httpTool[In, Out]) send(ctx context.Context, in In) (*Response, Out, error) {
	var zero Out
	req, err := h.request(ctx, in)
	if err != nil {
		return nil, zero, fmt.Errorf("build the request: %w", err)
	}
	if req == nil {
		return nil, zero, errors.New("build the request: the request function returned nil")
	}
	res, err := h.c.Do(req.WithContext(ctx))
	if err != nil {
		return nil, zero, err
	}
	out, err := h.decode(res)
	if err != nil {
		return res, zero, &UnknownOutcomeError{Request: target(req), Key: res.Key, Status: res.Status,
			Err: fmt.Errorf("the target acted (%d) but its answer could not be read: %w", res.Status, err)}
	}
	return res, out, nil
}

func (h *httpTool[In, Out]) call(ctx context.Context, in In) (Out, error) {
	res, out, err := h.send(ctx, in)
	if err == nil && res.Replayed {
		if p, ok := ctx.Value(replayedKey{}).(*bool); ok {
			*p = true
		}
	}
	return out, err
}

// dedupingTool is an httpTool whose target dedupes on the key: it has a
// probe.
type dedupingTool[In, Out any] struct{ *httpTool[In, Out] }

// Reconcile implements [tool.Reconciler] by sending the call's request
// again with its key: the target dedupes on it (Config.Dedupes), so it
// answers from its record of the first request, or acts once if the first
// never arrived.
func (d *dedupingTool[In, Out]) Reconcile(ctx context.Context, key string, args json.RawMessage) (tool.Probe, error) {
	var in In
	if len(args) > 0 {
		if err := json.Unmarshal(args, &in); err != nil {
			return tool.Probe{}, fmt.Errorf("httptool probe: decode the arguments: %w", err)
		}
	}
	if tool.IdempotencyKey(ctx) != key {
		ctx = tool.WithIdempotencyKey(ctx, key)
	}
	sent := key
	if v, err := d.c.cfg.Key(key); err == nil {
		sent = v
	}
	started := tool.CallStarted(ctx)
	if started.IsZero() {
		return tool.Probe{Outcome: tool.ProbeUnknown, Evidence: fmt.Sprintf("did not send the call's request again: when it started is not known, and the target keeps a key only %v (Config.KeyWindow); past that the same key acts again", d.c.cfg.KeyWindow)}, nil
	}
	if age := d.c.cfg.Clock().Sub(started); age >= d.c.cfg.KeyWindow {
		return tool.Probe{Outcome: tool.ProbeUnknown, Evidence: fmt.Sprintf("did not send the call's request again: it started %v ago (%s), and the target keeps a key only %v (Config.KeyWindow), so the same key may act a second time; look the key up at the target",
			age.Round(time.Second), started.UTC().Format(time.RFC3339), d.c.cfg.KeyWindow)}, nil
	}
	why := fmt.Sprintf("sent the call's request again with its idempotency key (%s: %s): the tool declares that the target dedupes on it, so this cannot act a second time", d.c.cfg.KeyHeader, sent)
	res, out, err := d.send(ctx, in)
	var rej *RejectedError
	switch {
	case err == nil:
		r, merr := d.result(out)
		if merr != nil {
			return tool.Probe{Outcome: tool.ProbeUnknown, Evidence: why + fmt.Sprintf("; it answered %d, but the answer does not encode: %v", res.Status, merr)}, nil
		}
		ev := why + fmt.Sprintf("; it answered %d", res.Status)
		if res.Replayed {
			r.Content += "\n" + replayNote
			ev += fmt.Sprintf(" with %s: true, a replay of its record of the first request", d.c.cfg.ReplayedHeader)
		} else {
			ev += fmt.Sprintf(" without %s: the target says nothing of a replay, so this request may be the one that acted (the first never arrived)", d.c.cfg.ReplayedHeader)
		}
		return tool.Probe{Outcome: tool.ProbeCommitted, Result: &r, Evidence: ev}, nil
	case errors.As(err, &rej) && probeOwnRefusal(rej.Status):
		return tool.Probe{Outcome: tool.ProbeUnknown, Evidence: why + "; it refused the re-sent request for a reason of its own (" + err.Error() + "), which says nothing of the first request"}, nil
	case errors.As(err, &rej):
		return tool.Probe{Outcome: tool.ProbeCommitted, Result: &tool.Result{Content: err.Error(), IsError: true},
			Evidence: why + "; it rejected the request without acting: " + err.Error()}, nil
	default:
		return tool.Probe{Outcome: tool.ProbeUnknown, Evidence: why + "; " + err.Error()}, nil
	}
}

// probeOwnRefusal reports whether a rejection is about the request that
// carried it (its credentials, its rate, its timing) rather than about its
// content: the target would refuse it whether or not an earlier request
// with the key acted, so a probe learns nothing from it.
func probeOwnRefusal(status int) bool {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusProxyAuthRequired, http.StatusRequestTimeout,
		http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	}
	return false
}

// result is what tool.Func makes of out: its JSON as Data, and as Content
// unless it is a string.
func (d *dedupingTool[In, Out]) result(out Out) (tool.Result, error) {
	data, err := json.Marshal(out)
	if err != nil {
		return tool.Result{}, err
	}
	content := string(data)
	if s, ok := any(out).(string); ok {
		content = s
	}
	return tool.Result{Content: content, Data: data}, nil
}
