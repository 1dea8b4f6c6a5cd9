package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/actoviq/actoviq-go/internal/jsonenc"
)

// Func returns a typed tool that calls fn.
//
// Unless spec sets them, the input schema is derived from In and the output
// schema from Out (github.com/google/jsonschema-go). The arguments are
// decoded into In; arguments that pass the schema but do not decode are
// reported to the model as an error Result, and fn is not called. Out is
// encoded as the result's Data, and its JSON text is the Content, except
// that a string Out is the Content as it is.
//
// An error from fn means the call ran and failed: the runtime commits it as
// an error result that the model sees (with the error's text), so the
// model can correct itself; the call is not run again. The exception is an
// error wrapping [ErrOutcomeUnknown], which fn returns when it cannot tell
// whether its effect happened (a timeout after the request was sent): the
// call's outcome is then unknown and, for a side effect, a person or a
// probe settles it. If a schema cannot be derived from the types,
// [NewRunner] rejects the tool and Call returns the error.
func Func[In, Out any](spec Spec, fn func(ctx context.Context, in In) (Out, error)) Tool {
	t := &funcTool[In, Out]{spec: spec, fn: fn, emptyIsZero: emptyIsZero[In]()}
	if len(t.spec.InputSchema) == 0 {
		t.spec.InputSchema, t.err = schemaFor[In](nil)
	}
	if t.err == nil && len(t.spec.OutputSchema) == 0 {
		t.spec.OutputSchema, t.err = schemaFor[Out](allowNullMaps)
	}
	if t.err != nil {
		t.err = fmt.Errorf("tool %s: derive schema: %w", spec.Name, t.err)
	}
	return t
}

func schemaFor[T any](adjust func(*jsonschema.Schema)) (json.RawMessage, error) {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, err
	}
	if adjust != nil {
		adjust(s)
	}
	return json.Marshal(s)
}

// allowNullMaps lets map-typed values be null in a derived output schema:
// encoding/json writes a nil map as null, and a tool that ran must not fail
// output validation over it. Map schemas are the objects with
// additionalProperties and no properties.
func allowNullMaps(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if s.Type == "object" && s.Properties == nil && s.AdditionalProperties != nil {
		s.Types, s.Type = []string{"null", "object"}, ""
	}
	for _, p := range s.Properties {
		allowNullMaps(p)
	}
	allowNullMaps(s.Items)
	allowNullMaps(s.AdditionalProperties)
}

type funcTool[In, Out any] struct {
	spec Spec
	fn   func(context.Context, In) (Out, error)
	err  error
	// emptyIsZero says decoding {} into In leaves it zero, so {} is not
	// decoded at all.
	emptyIsZero bool
}

// emptyIsZero reports whether json.Unmarshal of {} into a zero T leaves
// it as it is: T is a struct and decodes itself by reflection (neither T
// nor *T has an UnmarshalJSON), so an object without members sets
// nothing. A map would become an empty map, a pointer a new value.
func emptyIsZero[T any]() bool {
	t := reflect.TypeFor[T]()
	u := reflect.TypeFor[json.Unmarshaler]()
	return t.Kind() == reflect.Struct && !t.Implements(u) && !reflect.PointerTo(t).Implements(u)
}

func (t *funcTool[In, Out]) Spec() Spec { return t.spec }

func (t *funcTool[In, Out]) initErr() error { return t.err }

func (t *funcTool[In, Out]) Call(ctx context.Context, args json.RawMessage) (Result, error) {
	if t.err != nil {
		return Result{}, t.err
	}
	var in In
	if len(args) > 0 && !(t.emptyIsZero && string(bytes.TrimSpace(args)) == "{}") {
		if err := json.Unmarshal(args, &in); err != nil {
			return Result{Content: "invalid arguments: " + err.Error(), IsError: true}, nil
		}
	}
	out, err := t.fn(ctx, in)
	if err != nil {
		return Result{}, err
	}
	if s, ok := any(out).(string); ok {
		// As json.Marshal encodes a string, without reflection.
		return Result{Content: s, Data: jsonenc.AppendString(make([]byte, 0, len(s)+2), s)}, nil
	}
	data, err := json.Marshal(out)
	if err != nil {
		// fn already ran: its effect may have happened, but we have no
		// result to record.
		return Result{}, fmt.Errorf("encode output: %w (%w)", err, ErrOutcomeUnknown)
	}
	return Result{Content: string(data), Data: data}, nil
}
