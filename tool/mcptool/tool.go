package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actoviq/actoviq-go/tool"
)

// MetaIdempotencyKey is the _meta key under which every tools/call carries
// the call's idempotency key ([tool.IdempotencyKey]).
const MetaIdempotencyKey = "io.actoviq/idempotency-key"

// Tool is one server tool as a [tool.Tool].
type Tool struct {
	server *server
	remote string
	spec   tool.Spec
	ann    *mcp.ToolAnnotations
}

var _ tool.Tool = (*Tool)(nil)

// Spec implements [tool.Tool].
func (t *Tool) Spec() tool.Spec { return t.spec }

// Server returns the name of the tool's server.
func (t *Tool) Server() string { return t.server.name }

// RemoteName returns the tool's name on its server.
func (t *Tool) RemoteName() string { return t.remote }

// Annotations returns the annotations the server sent (nil when none),
// whether or not the server is trusted.
func (t *Tool) Annotations() *mcp.ToolAnnotations { return t.ann }

// discover lists the server's tools and builds their specs.
func (sv *server) discover(ctx context.Context) ([]*Tool, error) {
	sess, err := sv.get(ctx)
	if err != nil {
		if errors.Is(err, ErrClosed) {
			return nil, ErrClosed
		}
		var ae *AuthError
		if errors.As(err, &ae) {
			return nil, ae
		}
		return nil, sv.errorf("connect: %w", err)
	}
	var listed []*mcp.Tool
	for t, err := range sess.cs.Tools(ctx, nil) {
		if err != nil {
			// Listing changes nothing; drop the connection only if
			// it broke, so the next attempt starts clean.
			sv.drop(sess)
			return nil, sv.errorf("list tools: %w", err)
		}
		listed = append(listed, t)
	}
	offered := map[string]bool{}
	for _, t := range listed {
		offered[t.Name] = true
	}
	for _, n := range sv.cfg.AllowedTools {
		if !offered[n] {
			return nil, &ConfigError{Server: sv.name, Field: "allowedTools", Reason: fmt.Sprintf("the server offers no tool %q", n)}
		}
	}
	for _, n := range sortedOverrideKeys(sv.cfg.Tools) {
		if !offered[n] {
			return nil, &ConfigError{Server: sv.name, Field: "tools." + n, Reason: fmt.Sprintf("the server offers no tool %q", n)}
		}
	}
	var out []*Tool
	names := map[string]string{}
	for _, mt := range listed {
		if sv.cfg.AllowedTools != nil && !slices.Contains(sv.cfg.AllowedTools, mt.Name) {
			continue
		}
		t, err := sv.newTool(mt)
		if err != nil {
			return nil, err
		}
		if prev, dup := names[t.spec.Name]; dup {
			return nil, sv.errorf("tools %q and %q both map to the name %q", prev, mt.Name, t.spec.Name)
		}
		names[t.spec.Name] = mt.Name
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *Tool) int { return strings.Compare(a.spec.Name, b.spec.Name) })
	return out, nil
}

func sortedOverrideKeys(m map[string]ToolOverride) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func (sv *server) newTool(mt *mcp.Tool) (*Tool, error) {
	ov := sv.cfg.Tools[mt.Name]
	spec := tool.Spec{
		Name:            QualifiedName(sv.name, mt.Name),
		Description:     sv.scrub.Text(describe(mt)),
		Effect:          effectFor(mt.Annotations, sv.cfg.TrustAnnotations, ov.Effect),
		RequireApproval: ov.RequireApproval,
	}
	var err error
	if spec.InputSchema, err = sv.schema(mt.InputSchema); err != nil {
		return nil, sv.errorf("tool %q: input schema: %w", mt.Name, err)
	}
	if mt.OutputSchema != nil {
		if spec.OutputSchema, err = sv.schema(mt.OutputSchema); err != nil {
			return nil, sv.errorf("tool %q: output schema: %w", mt.Name, err)
		}
	}
	if err := spec.Validate(); err != nil {
		return nil, sv.errorf("tool %q: %w", mt.Name, err)
	}
	return &Tool{server: sv, remote: mt.Name, spec: spec, ann: mt.Annotations}, nil
}

func (sv *server) schema(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return sv.scrub.JSON(b), nil
}

// Call implements [tool.Tool]: one tools/call, sent at most once, carrying
// the call's idempotency key in _meta under [MetaIdempotencyKey].
//
// What comes back:
//   - the server's result; isError:true becomes a [tool.Result] with
//     IsError, which the model sees;
//   - a JSON-RPC "invalid params" error (the server refused the
//     arguments; the tool did not run): a [*tool.Error] of kind
//     [tool.KindValidation], so errors.Is(err, tool.ErrValidation). The
//     runtime shows it to the model as an error result; the connection is
//     kept;
//   - parse error, invalid request, method not found: an error whose
//     outcome is known (nothing ran); the connection is kept;
//   - a transport failure, the server exiting, the context ending while
//     the call is in flight, or any other JSON-RPC error: an error
//     wrapping [tool.ErrOutcomeUnknown]. The connection is closed and
//     dropped, the call is never re-sent, and the next call connects
//     again;
//   - no connection could be made (nothing was sent): an error whose
//     outcome is known.
//
// Every error text is scrubbed of the server's env and header values.
func (t *Tool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	return t.exchange(ctx, t.params(tool.IdempotencyKey(ctx), args), 0)
}

var _ tool.Resumer = (*Tool)(nil)

// params builds the call's tools/call params, with its key in _meta.
func (t *Tool) params(key string, args json.RawMessage) *mcp.CallToolParams {
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	params := &mcp.CallToolParams{Name: t.remote, Arguments: args}
	if key != "" {
		params.Meta = mcp.Meta{MetaIdempotencyKey: key}
	}
	return params
}

// exchange sends a tools/call (the call, or a continuation the server asked
// for) once, and follows the answer: a result, a task (task.go) or an
// input_required round (mrtr.go), whose continuation it sends with the same
// key after recording the round.
func (t *Tool) exchange(ctx context.Context, params *mcp.CallToolParams, round int) (tool.Result, error) {
	sv := t.server
	for {
		sess, err := sv.get(ctx)
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return tool.Result{}, ErrClosed
			}
			// Nothing was sent: the outcome is known.
			var ae *AuthError
			if errors.As(err, &ae) {
				return tool.Result{}, fmt.Errorf("mcptool: tool %s: %w; the tool did not run", t.remote, ae)
			}
			if round > 0 {
				return tool.Result{}, t.unknownf(err, "connecting for the continuation of round %d failed after the server's input_required answer; nothing more was sent", round)
			}
			return tool.Result{}, sv.errorf("tool %s: connect: %w", t.remote, err)
		}
		key, _ := params.Meta[MetaIdempotencyKey].(string)
		var cp *capture
		if key != "" {
			var done func()
			cp, done = sv.captures.add(key)
			defer done()
		}
		obs := &callObserver{}
		untrack := sess.track(ctx)
		res, err := sess.cs.CallTool(context.WithValue(ctx, callObserverKey{}, obs), params)
		untrack()
		if err != nil {
			return tool.Result{}, t.failed(ctx, sess, obs, err)
		}
		var raw json.RawMessage
		if cp != nil {
			raw = cp.result()
		}
		tk, err := taskAnswer(raw)
		if err != nil {
			return tool.Result{}, t.unknownf(nil, "%v", err)
		}
		if tk != nil {
			return t.startTask(ctx, tk)
		}
		if isTaskResult(res) {
			return tool.Result{}, t.unknownf(nil, "the server answered with a task handle that this connection cannot read (a custom streamable-HTTP Connect); the task was not followed")
		}
		if !res.NeedsInput() {
			return t.result(res), nil
		}
		round++
		if round > maxRounds {
			return tool.Result{IsError: true, Content: fmt.Sprintf("the MCP server asked for input more than %d times; the call was given up and did not complete", maxRounds)}, nil
		}
		reqs, err := json.Marshal(res.InputRequests)
		if err != nil {
			return tool.Result{}, t.unknownf(err, "the server's input requests are unreadable")
		}
		ih := InputHandle{Server: sv.name, Tool: t.remote, Round: round, Step: StepAsked, InputRequests: reqs, RequestState: res.RequestState}
		if params, err = t.continuation(ctx, params, ih, res.InputRequests, false); err != nil {
			return tool.Result{}, err
		}
	}
}

// failed classifies an error of an in-flight tools/call.
func (t *Tool) failed(ctx context.Context, sess *session, obs *callObserver, err error) error {
	sv := t.server
	if refused, status := obs.refused(); refused {
		// Every POST of the call was answered 401 or 403: the server
		// refused it before it could act. The connection may have been
		// failed by the SDK; start afresh next time.
		sv.drop(sess)
		var ae *AuthError
		if errors.As(err, &ae) {
			return fmt.Errorf("mcptool: tool %s: %w; the tool did not run", t.remote, ae)
		}
		return sv.errorf("tool %s: the server refused the call with HTTP %d; the tool did not run: %w", t.remote, status, err)
	}
	var werr *jsonrpc.Error
	if ctx.Err() == nil && !errors.Is(err, mcp.ErrConnectionClosed) && errors.As(err, &werr) {
		switch werr.Code {
		case jsonrpc.CodeInvalidParams:
			return &tool.Error{Kind: tool.KindValidation, Tool: t.spec.Name,
				Violations: []string{sv.scrub.Text(werr.Message)},
				Err:        sv.errorf("tool %s: the server refused the arguments (JSON-RPC %d); the tool did not run", t.remote, werr.Code)}
		case jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest, jsonrpc.CodeMethodNotFound:
			return sv.errorf("tool %s: the server refused the request (JSON-RPC %d: %s); the tool did not run", t.remote, werr.Code, werr.Message)
		}
	}
	// The request may have reached the server and acted. Never send it
	// again, and never reuse this connection.
	sv.drop(sess)
	why := "the call failed in flight"
	switch {
	case ctx.Err() != nil:
		why = "the call's context ended while it was in flight (" + ctx.Err().Error() + ")"
	case werr == nil && sess.version() >= protocol20260728:
		// No stream resumption: a response stream that closed before
		// the answer was a cancellation on the server's side, and only
		// a new request (with a new id) could ask again. That is not
		// this client's to decide.
		why = "the response stream broke while the call was in flight (protocol " + sess.version() + ": no stream resumption; the server took the closed stream as a cancellation)"
	case errors.Is(err, mcp.ErrConnectionClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		why = "the connection closed while the call was in flight (the server may have exited)"
	case werr != nil:
		why = fmt.Sprintf("the server answered JSON-RPC error %d, which does not say whether the tool acted", werr.Code)
	}
	return scrubError(sv.scrub, &unknownError{msg: fmt.Sprintf("mcptool: server %s: tool %s: %s; the call was not re-sent and its connection was dropped: %v",
		sv.name, t.remote, why, err), cause: err})
}

// unknownError is an in-flight failure: it matches tool.ErrOutcomeUnknown
// and whatever the cause matches (context.DeadlineExceeded,
// mcp.ErrConnectionClosed).
type unknownError struct {
	msg   string
	cause error
}

func (e *unknownError) Error() string { return e.msg }
func (e *unknownError) Is(target error) bool {
	return target == tool.ErrOutcomeUnknown || errors.Is(e.cause, target)
}

// result maps a tools/call result. Text blocks become the content, one per
// line; other blocks are summarised; structuredContent becomes Data.
func (t *Tool) result(res *mcp.CallToolResult) tool.Result {
	sv := t.server
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link %s]", c.URI))
		case *mcp.EmbeddedResource:
			switch {
			case c.Resource == nil:
				parts = append(parts, "[embedded resource]")
			case c.Resource.Text != "":
				parts = append(parts, c.Resource.Text)
			default:
				parts = append(parts, fmt.Sprintf("[resource %s, %s, %d bytes]", c.Resource.URI, c.Resource.MIMEType, len(c.Resource.Blob)))
			}
		default:
			b, _ := json.Marshal(c)
			parts = append(parts, string(b))
		}
	}
	out := tool.Result{Content: sv.scrub.Text(strings.Join(parts, "\n")), IsError: res.IsError}
	if res.StructuredContent != nil && !out.IsError {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			out.Data = sv.scrub.JSON(b)
		}
	}
	return out
}
