package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/actoviq/actoviq-go/tool"
)

type weatherIn struct {
	City  string `json:"city" jsonschema:"the city name"`
	Units string `json:"units,omitempty"`
}

type weatherOut struct {
	TempC float64 `json:"temp_c"`
	Sky   string  `json:"sky"`
}

func TestFuncSchemas(t *testing.T) {
	t.Parallel()
	w := tool.Func(tool.Spec{Name: "weather", Effect: tool.Read},
		func(ctx context.Context, in weatherIn) (weatherOut, error) {
			return weatherOut{TempC: 21, Sky: "clear over " + in.City}, nil
		})
	spec := w.Spec()
	var in map[string]any
	if err := json.Unmarshal(spec.InputSchema, &in); err != nil {
		t.Fatal(err)
	}
	if in["type"] != "object" || !strings.Contains(string(spec.InputSchema), `"required":["city"]`) {
		t.Fatalf("input schema %s", spec.InputSchema)
	}
	if !strings.Contains(string(spec.OutputSchema), `"temp_c"`) {
		t.Fatalf("output schema %s", spec.OutputSchema)
	}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	r, err := tool.NewRunner([]tool.Tool{w}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), &tool.Call{Name: "weather", Args: json.RawMessage(`{"city":"Oslo"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != `{"temp_c":21,"sky":"clear over Oslo"}` || string(res.Data) != res.Content {
		t.Fatalf("result %+v", res)
	}
	_, err = r.Run(context.Background(), &tool.Call{Name: "weather", Args: json.RawMessage(`{"units":3}`)})
	var te *tool.Error
	if !errors.As(err, &te) || te.Kind != tool.KindValidation || len(te.Violations) != 2 {
		t.Fatalf("want 2 violations (missing city, units type): %v", err)
	}
}

func TestFuncGivenSchemaAndStringOut(t *testing.T) {
	t.Parallel()
	given := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","maxLength":5}}}`)
	greet := tool.Func(tool.Spec{Name: "greet", InputSchema: given},
		func(ctx context.Context, in struct {
			Name string `json:"name"`
		}) (string, error) {
			return "hello " + in.Name, nil
		})
	if string(greet.Spec().InputSchema) != string(given) {
		t.Fatal("given schema replaced")
	}
	res, err := greet.Call(context.Background(), json.RawMessage(`{"name":"ann"}`))
	if err != nil || res.Content != "hello ann" || string(res.Data) != `"hello ann"` {
		t.Fatalf("%+v %v", res, err)
	}
	res, err = greet.Call(context.Background(), json.RawMessage(`{"name":1}`))
	if err != nil || !res.IsError {
		t.Fatalf("undecodable args should be an error result: %+v %v", res, err)
	}
}

func TestFuncErrors(t *testing.T) {
	t.Parallel()
	f := tool.Func(tool.Spec{Name: "charge"}, func(ctx context.Context, in struct{}) (int, error) {
		return 0, errors.Join(errors.New("gateway timeout"), tool.ErrOutcomeUnknown)
	})
	r, err := tool.NewRunner([]tool.Tool{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Run(context.Background(), &tool.Call{Name: "charge"})
	if !errors.Is(err, tool.ErrExecution) || !errors.Is(err, tool.ErrOutcomeUnknown) {
		t.Fatalf("err = %v", err)
	}
}

func TestFuncNilMapOutput(t *testing.T) {
	t.Parallel()
	type out struct {
		Tags  map[string]string `json:"tags"`
		Items []int             `json:"items"`
	}
	f := tool.Func(tool.Spec{Name: "m"}, func(context.Context, struct{}) (out, error) { return out{}, nil })
	g := tool.Func(tool.Spec{Name: "n"}, func(context.Context, struct{}) (map[string]int, error) { return nil, nil })
	r, err := tool.NewRunner([]tool.Tool{f, g}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"m", "n"} {
		if _, err := r.Run(context.Background(), &tool.Call{Name: name}); err != nil {
			t.Fatalf("%s: nil map or slice failed output validation: %v", name, err)
		}
	}
}

// selfDecoding decodes itself: {} must still reach its UnmarshalJSON.
type selfDecoding struct{ Saw string }

func (s *selfDecoding) UnmarshalJSON(b []byte) error { s.Saw = "decoded " + string(b); return nil }

// TestFuncEmptyArguments: arguments {} (a tool without parameters, as
// most calls of one send) reach fn as json.Unmarshal of {} would make
// them, for a plain struct (not decoded: zero), a struct that decodes
// itself, and a map (empty, not nil); the runner's schema check of {}
// still refuses {} where a property is required.
func TestFuncEmptyArguments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type plain struct {
		N int `json:"n,omitempty"`
	}
	var gotPlain plain
	var gotSelf selfDecoding
	var gotMap map[string]int
	tools := []tool.Tool{
		tool.Func(tool.Spec{Name: "plain", Effect: tool.Read}, func(ctx context.Context, in plain) (string, error) { gotPlain = in; return "ok", nil }),
		tool.Func(tool.Spec{Name: "self", Effect: tool.Read, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, in selfDecoding) (string, error) { gotSelf = in; return "ok", nil }),
		tool.Func(tool.Spec{Name: "map", Effect: tool.Read}, func(ctx context.Context, in map[string]int) (string, error) { gotMap = in; return "ok", nil }),
		tool.Func(tool.Spec{Name: "weather", Effect: tool.Read}, func(ctx context.Context, in weatherIn) (string, error) { return "ok", nil }),
	}
	r, err := tool.NewRunner(tools, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"plain", "self", "map"} {
		for _, args := range []string{`{}`, ` { } `, "\n{}\t"} {
			if _, err := r.Run(ctx, &tool.Call{Name: name, Args: json.RawMessage(args)}); err != nil {
				t.Fatalf("%s %q: %v", name, args, err)
			}
		}
	}
	if gotPlain != (plain{}) || !strings.HasPrefix(gotSelf.Saw, "decoded {") || gotMap == nil || len(gotMap) != 0 {
		t.Fatalf("plain %+v, self %+v, map %#v", gotPlain, gotSelf, gotMap)
	}
	_, err = r.Run(ctx, &tool.Call{Name: "weather", Args: json.RawMessage(`{}`)})
	var te *tool.Error
	if !errors.As(err, &te) || te.Kind != tool.KindValidation || !strings.Contains(strings.Join(te.Violations, ";"), "city") {
		t.Fatalf("weather {}: %v", err)
	}
}
