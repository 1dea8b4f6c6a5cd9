package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/actoviq/actoviq-go/internal/jsonenc"
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
func (s Spec) compile() (in, out *schema, err error) {
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
var compiled sync.Map // string → *schema

// schema is a compiled schema with what is known of it once for all the
// calls it checks.
type schema struct {
	s *jsonschema.Schema
	// emptyOK says the instance {} passes (most calls of a tool without
	// parameters send just that).
	emptyOK bool
	// only is set when the schema's one keyword is "type" with one of
	// these names: the first byte of each instance of that type ('"'
	// string, '{' object, '[' array, 'n' null). Any valid JSON value
	// that starts with it passes, and nothing else does.
	only byte
}

// validate returns the instance's violations, nil when it passes.
func (sc *schema) validate(raw json.RawMessage) []string {
	if sc.only != 0 {
		if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) > 0 && t[0] == sc.only && jsonenc.Valid(raw) {
			return nil
		}
	}
	return validateJSON(sc.s, raw)
}

func compileSchema(raw json.RawMessage) (*schema, error) {
	if s, ok := compiled.Load(string(raw)); ok {
		return s.(*schema), nil
	}
	s, err := compileSchemaUncached(raw)
	if err != nil {
		return nil, err
	}
	sc := &schema{s: s, emptyOK: validateJSON(s, json.RawMessage(`{}`)) == nil, only: typeOnly(raw)}
	compiled.Store(string(raw), sc)
	return sc, nil
}

// typeOnly returns schema.only for a schema's text: the first byte of the
// one type it requires, when "type" is its one keyword (and that type is
// string, object, array or null); 0 otherwise.
func typeOnly(raw json.RawMessage) byte {
	var doc map[string]json.RawMessage
	if json.Unmarshal(raw, &doc) != nil || len(doc) != 1 {
		return 0
	}
	var typ string
	if json.Unmarshal(doc["type"], &typ) != nil {
		return 0
	}
	return map[string]byte{"string": '"', "object": '{', "array": '[', "null": 'n'}[typ]
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
