package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actoviq/actoviq-go/tool"
)

// maxRounds bounds the input_required rounds of one call.
const maxRounds = 10

// The steps of an [InputHandle].
const (
	// StepAsked: the server's input_required answer is recorded; no
	// continuation was sent for this round.
	StepAsked = "asked"
	// StepSending: the answers are recorded and the continuation is about
	// to be sent (or was): from here on its outcome is unknown until it
	// answers.
	StepSending = "sending"
)

// InputHandle is the Data of a [HandleInput] handle: one round of a
// multi-round-trip call (SEP-2322).
type InputHandle struct {
	// Server and Tool name the server and the tool on it.
	Server string `json:"server"`
	// Tool is the tool's name on its server.
	Tool string `json:"tool"`
	// Round counts the input_required answers of the call, from 1.
	Round int `json:"round"`
	// Step is [StepAsked] or [StepSending].
	Step string `json:"step"`
	// InputRequests is what the server asked (its inputRequests).
	InputRequests json.RawMessage `json:"inputRequests"`
	// RequestState is the server's opaque state, echoed back with the
	// continuation.
	RequestState string `json:"requestState,omitempty"`
	// InputResponses are the answers, set at [StepSending].
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
	// AnsweredBy says who answered: "handler" or "person".
	AnsweredBy string `json:"answeredBy,omitempty"`
}

func (t *Tool) inputHandle(ih InputHandle) (tool.Handle, error) {
	b, err := json.Marshal(ih)
	if err != nil {
		return tool.Handle{}, err
	}
	ev := fmt.Sprintf("MCP server %s asked for input (round %d) for tool %s", ih.Server, ih.Round, ih.Tool)
	if ih.Step == StepSending {
		ev = fmt.Sprintf("MCP server %s: tool %s: continuation of round %d sent with the answers (%s)", ih.Server, ih.Tool, ih.Round, ih.AnsweredBy)
	}
	return tool.Handle{Kind: HandleInput, Data: b, Evidence: t.server.scrub.Text(ev)}, nil
}

// continuation answers one input_required round and returns the params of
// the continuation send. The round is recorded (StepAsked) before anyone is
// asked, and the answers (StepSending) before the continuation is sent.
func (t *Tool) continuation(ctx context.Context, params *mcp.CallToolParams, ih InputHandle, reqs mcp.InputRequestMap, recorded bool) (*mcp.CallToolParams, error) {
	if !recorded {
		h, err := t.inputHandle(ih)
		if err == nil {
			err = record(ctx, h)
		}
		if err != nil {
			return nil, t.unknownf(err, "recording the server's input_required answer (round %d) failed; no continuation was sent", ih.Round)
		}
	}
	responses, by, err := t.fulfill(ctx, reqs)
	if err != nil {
		return nil, err
	}
	rb, err := json.Marshal(responses)
	if err != nil {
		return nil, t.server.errorf("tool %s: answers: %w", t.remote, err)
	}
	ih.Step, ih.InputResponses, ih.AnsweredBy = StepSending, rb, by
	h, err := t.inputHandle(ih)
	if err == nil {
		err = record(ctx, h)
	}
	if err != nil {
		return nil, t.unknownf(err, "recording the answers of round %d failed; the continuation was not sent", ih.Round)
	}
	next := *params
	next.InputResponses = responses
	next.RequestState = ih.RequestState
	return &next, nil
}

// fulfill answers a server's input requests: elicitations through
// Options.Elicit, or the person's answer a resumed call carries
// ([tool.Answer]). Without either, it returns a [*tool.InputError]. Other
// requests (sampling, roots) this client does not offer: the call fails
// with its outcome known (the server did not complete it).
func (t *Tool) fulfill(ctx context.Context, reqs mcp.InputRequestMap) (mcp.InputResponseMap, string, error) {
	sv := t.server
	ids := make([]string, 0, len(reqs))
	for id := range reqs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if len(ids) == 0 {
		return nil, "", sv.errorf("tool %s: the server asked for input without saying what (load shedding); the call did not complete", t.remote)
	}
	out := mcp.InputResponseMap{}
	answer := tool.Answer(ctx)
	if answer != nil {
		// A person answered the interruption: {"<id>": {"action":..., "content":{...}}}
		// or, for a single question, the answer itself.
		var per map[string]json.RawMessage
		_ = json.Unmarshal(answer, &per)
		for _, id := range ids {
			a, ok := per[id]
			if !ok && len(ids) == 1 {
				a = answer
			}
			res, err := personAnswer(a)
			if err != nil {
				// The person's answer cannot be sent: the question
				// stays open and is asked again, saying why. Nothing
				// was sent past the question.
				ie := t.question(reqs, ids)
				ie.Prompt = fmt.Sprintf("%s (the answer given to question %q could not be used: %v)", ie.Prompt, id, err)
				return nil, "", ie
			}
			out[id] = res
		}
		return out, "person", nil
	}
	h := sv.src.opts.Elicit
	for _, id := range ids {
		p, ok := reqs[id].(*mcp.ElicitParams)
		if !ok {
			return nil, "", sv.errorf("tool %s: the server asked for %T, which this client does not offer; the call did not complete", t.remote, reqs[id])
		}
		if h == nil {
			continue
		}
		res, err := sv.elicit(ctx, h, p)
		if err != nil {
			return nil, "", sv.errorf("tool %s: answering input request %q: %w", t.remote, id, err)
		}
		out[id] = res
	}
	if h == nil {
		return nil, "", t.question(reqs, ids)
	}
	return out, "handler", nil
}

// question is the [tool.InputError] that puts a round's input requests
// (sorted ids) to a person.
func (t *Tool) question(reqs mcp.InputRequestMap, ids []string) *tool.InputError {
	sv := t.server
	var prompt string
	var schema json.RawMessage
	for _, id := range ids {
		p, ok := reqs[id].(*mcp.ElicitParams)
		if !ok {
			continue
		}
		prompt = sv.scrub.Text(p.Message)
		schema = nil
		if p.RequestedSchema != nil {
			schema, _ = json.Marshal(p.RequestedSchema)
		}
	}
	if len(ids) > 1 {
		prompt = fmt.Sprintf("%s (and %d more questions: answer with an object keyed by question id %v)", prompt, len(ids)-1, ids)
		schema = nil
	}
	return &tool.InputError{Prompt: fmt.Sprintf("MCP server %s asks: %s", sv.name, prompt), Schema: schema}
}

// personAnswer reads a person's answer: an elicitation result
// ({"action":"accept","content":{...}}), or just the content (accept).
func personAnswer(a json.RawMessage) (*mcp.ElicitResult, error) {
	if len(a) == 0 {
		return nil, errors.New("no answer")
	}
	var full struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	if err := json.Unmarshal(a, &full); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	switch full.Action {
	case ElicitAccept, ElicitDecline, ElicitCancel:
		res := &mcp.ElicitResult{Action: full.Action}
		if full.Action == ElicitAccept {
			res.Content = full.Content
			if res.Content == nil {
				res.Content = map[string]any{}
			}
		}
		return res, nil
	case "":
		var content map[string]any
		if err := json.Unmarshal(a, &content); err != nil {
			return nil, err
		}
		return &mcp.ElicitResult{Action: ElicitAccept, Content: content}, nil
	}
	return nil, fmt.Errorf("action %q: want accept, decline or cancel", full.Action)
}

// Resume implements [tool.Resumer]: it continues a call from the handle
// this package recorded for it, without calling the tool again.
//
//   - [HandleTask]: polls the stored task id (tasks/get) until the task
//     ends; a task the server no longer knows (expired, lost) is an error
//     of unknown outcome naming the task.
//   - [HandleInput] at [StepAsked] (the process stopped between the
//     server's input_required answer and the continuation): asks for the
//     answers again (the elicitation handler, or the person's answer the
//     runtime hands over) and sends the continuation the server asked for,
//     with the same idempotency key.
//   - [HandleInput] at [StepSending]: the continuation may have reached the
//     server; an error of unknown outcome.
func (t *Tool) Resume(ctx context.Context, key string, args json.RawMessage, h tool.Handle) (tool.Result, error) {
	switch h.Kind {
	case HandleTask:
		var th TaskHandle
		if err := json.Unmarshal(h.Data, &th); err != nil || th.TaskID == "" {
			return tool.Result{}, t.unknownf(err, "the recorded task handle is unreadable")
		}
		return t.followTask(ctx, th, 0)
	case HandleInput:
		var ih InputHandle
		if err := json.Unmarshal(h.Data, &ih); err != nil {
			return tool.Result{}, t.unknownf(err, "the recorded input_required handle is unreadable")
		}
		if ih.Step != StepAsked {
			return tool.Result{}, t.unknownf(nil, "the continuation of round %d may have been sent when the process stopped (answers recorded: %s)", ih.Round, truncate(string(ih.InputResponses), 200))
		}
		var reqs mcp.InputRequestMap
		if err := json.Unmarshal(ih.InputRequests, &reqs); err != nil {
			return tool.Result{}, t.unknownf(err, "the recorded input requests are unreadable")
		}
		params := t.params(key, args)
		next, err := t.continuation(ctx, params, ih, reqs, true)
		if err != nil {
			return tool.Result{}, err
		}
		// The person's answer was to this round's question only: a
		// further round the server asks goes to a person again.
		return t.exchange(tool.WithAnswer(ctx, nil), next, ih.Round)
	}
	return tool.Result{}, t.unknownf(nil, "a handle of kind %q is not this package's", h.Kind)
}
