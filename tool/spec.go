package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Spec describes a tool to the model and to the runtime.
type Spec struct {
	// Name is unique within a runner and matches ^[a-zA-Z0-9_.-]{1,128}$.
	Name string
	// Description tells the model what the tool does and when to use it.
	Description string
	// InputSchema is the JSON Schema of the arguments object; empty means
	// any JSON object.
	InputSchema json.RawMessage
	// OutputSchema, when set, is the JSON Schema of [Result.Data]; empty
	// means the output is not validated.
	OutputSchema json.RawMessage
	// Effect declares what a call does; the zero value is SideEffect.
	Effect Effect
	// RequireApproval makes the default policy ask a person before every
	// call.
	RequireApproval bool
	// Timeout bounds one call; zero means the runner's default.
	Timeout time.Duration
}

var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,128}$`)

// Validate checks the name, the effect, the timeout and that both schemas
// compile.
func (s Spec) Validate() error {
	_, _, err := s.compile()
	return err
}

// compile validates the spec and compiles its schemas. A nil schema means
// "not validated" (output) or is replaced by any-object (input).
func (s Spec) compile() (in, out *jsonschema.Schema, err error) {
	if !namePattern.MatchString(s.Name) {
		return nil, nil, fmt.Errorf("tool: invalid name %q: must match %s", s.Name, namePattern)
	}
	if !s.Effect.Valid() {
		return nil, nil, fmt.Errorf("tool %s: invalid effect %d", s.Name, int(s.Effect))
	}
	if s.Timeout < 0 {
		return nil, nil, fmt.Errorf("tool %s: negative timeout %s", s.Name, s.Timeout)
	}
	inSchema := s.InputSchema
	if len(bytes.TrimSpace(inSchema)) == 0 {
		inSchema = json.RawMessage(`{"type":"object"}`)
	}
	if in, err = compileSchema(inSchema); err != nil {
		return nil, nil, fmt.Errorf("tool %s: input schema: %w", s.Name, err)
	}
	if len(bytes.TrimSpace(s.OutputSchema)) > 0 {
		if out, err = compileSchema(s.OutputSchema); err != nil {
			return nil, nil, fmt.Errorf("tool %s: output schema: %w", s.Name, err)
		}
	}
	return in, out, nil
}

// compiled caches compiled schemas by their text. A compiled schema is
// immutable and safe for concurrent use, and runners are built for every
// run, so each distinct schema is compiled once per process.
var compiled sync.Map // string → *jsonschema.Schema

func compileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	if s, ok := compiled.Load(string(raw)); ok {
		return s.(*jsonschema.Schema), nil
	}
	s, err := compileSchemaUncached(raw)
	if err != nil {
		return nil, err
	}
	compiled.Store(string(raw), s)
	return s, nil
}

// empties caches, per compiled schema, whether the instance {} passes it
// (acceptsEmpty).
var empties sync.Map // *jsonschema.Schema → bool

// acceptsEmpty reports whether the empty object {} passes s: a compiled
// schema is immutable, so the answer is the same for every call.
func acceptsEmpty(s *jsonschema.Schema) bool {
	if ok, found := empties.Load(s); found {
		return ok.(bool)
	}
	ok := validateJSON(s, json.RawMessage(`{}`)) == nil
	empties.Store(s, ok)
	return ok
}

func compileSchemaUncached(raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	const loc = "mem:///schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return c.Compile(loc)
}
