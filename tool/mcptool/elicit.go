package mcptool

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Actions an [ElicitResult] can carry.
const (
	ElicitAccept  = "accept"  // the person answered; Content holds the answer
	ElicitDecline = "decline" // the person said no
	ElicitCancel  = "cancel"  // the person dismissed the question
)

// ElicitRequest is a server's request for input from a person, made while
// one of its tools runs (MCP elicitation). Route it to a person the way an
// approval goes; a process with no person to ask declines.
type ElicitRequest struct {
	// Server is the server's name in the configuration.
	Server string
	// Message is the server's question, scrubbed of the server's secrets.
	Message string
	// Mode is "form" (answer the fields of Schema) or "url" (the person
	// is to open URL).
	Mode string
	// Schema is the requested schema in form mode: a JSON object schema
	// whose properties are flat (string, number, integer, boolean, enum
	// arrays), each with an optional title, description and default.
	Schema json.RawMessage
	// URL is the page to open in url mode.
	URL string
}

// ElicitResult is the answer to an [ElicitRequest].
type ElicitResult struct {
	// Action is [ElicitAccept], [ElicitDecline] or [ElicitCancel].
	Action string
	// Content is the answer when Action is accept: property name to value.
	// A property left out takes its default from the schema, if it has one.
	Content map[string]any
}

// ElicitHandler answers elicitation requests. It runs while the tool call
// that caused it waits; ctx ends when the call does.
type ElicitHandler func(ctx context.Context, req *ElicitRequest) (*ElicitResult, error)

// DeclineElicitation is an [ElicitHandler] for a process with no person to
// ask: it declines every request.
func DeclineElicitation(context.Context, *ElicitRequest) (*ElicitResult, error) {
	return &ElicitResult{Action: ElicitDecline}, nil
}

// elicitationHandler adapts Options.Elicit for the SDK; nil when unset, so
// that the capability is not declared. The SDK validates the schema before
// and applies its defaults to an accepted answer after.
func (sv *server) elicitationHandler() func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	h := sv.src.opts.Elicit
	if h == nil {
		return nil
	}
	return func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return sv.elicit(ctx, h, req.Params)
	}
}

// elicit asks h, for the SDK's elicitation requests and for those of a
// multi-round-trip answer.
func (sv *server) elicit(ctx context.Context, h ElicitHandler, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	{
		er := &ElicitRequest{Server: sv.name, Message: sv.scrub.Text(p.Message), Mode: p.Mode, URL: p.URL}
		if er.Mode == "" {
			er.Mode = "form"
			if p.URL != "" {
				er.Mode = "url"
			}
		}
		if p.RequestedSchema != nil {
			b, err := json.Marshal(p.RequestedSchema)
			if err != nil {
				return nil, fmt.Errorf("mcptool: server %s: elicitation schema: %w", sv.name, err)
			}
			er.Schema = sv.scrub.JSON(b)
		}
		res, err := h(ctx, er)
		if err != nil {
			return nil, scrubError(sv.scrub, err)
		}
		if res == nil {
			res = &ElicitResult{Action: ElicitDecline}
		}
		switch res.Action {
		case ElicitAccept, ElicitDecline, ElicitCancel:
		default:
			return nil, fmt.Errorf("mcptool: server %s: the elicitation handler answered action %q: want accept, decline or cancel", sv.name, res.Action)
		}
		out := &mcp.ElicitResult{Action: res.Action}
		if res.Action == ElicitAccept {
			out.Content = res.Content
			if out.Content == nil {
				out.Content = map[string]any{}
			}
		}
		return out, nil
	}
}
