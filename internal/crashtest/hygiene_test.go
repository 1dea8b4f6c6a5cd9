package crashtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"strings"
	"sync"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store/storepg"
	"github.com/actoviq/actoviq-go/tool"
)

// plant is the prefix of every secret TestSecretsReachNoStore plants.
const plant = "sk-plant-"

// hygieneTool is a tool whose behaviour a scenario sets: it returns res,
// or fails with err (which may echo its arguments), and has a probe that
// answers "unknown" with evidence.
type hygieneTool struct {
	name     string
	effect   tool.Effect
	res      tool.Result
	err      func(args json.RawMessage) error
	evidence string
}

func (h *hygieneTool) Spec() tool.Spec {
	return tool.Spec{Name: h.name, Description: "hygiene", Effect: h.effect}
}

func (h *hygieneTool) Call(_ context.Context, args json.RawMessage) (tool.Result, error) {
	if h.err != nil {
		return tool.Result{}, h.err(args)
	}
	return h.res, nil
}

func (h *hygieneTool) Reconcile(context.Context, string, json.RawMessage) (tool.Probe, error) {
	return tool.Probe{Outcome: tool.ProbeUnknown, Evidence: h.evidence}, nil
}

// failingProvider ends every model call with a final provider error whose
// message quotes a credential.
type failingProvider struct{ msg string }

func (failingProvider) Name() string                         { return "failing" }
func (failingProvider) Capabilities(string) llm.Capabilities { return llm.Capabilities{Tools: true} }
func (f failingProvider) Generate(context.Context, *llm.Request) (*llm.Response, error) {
	return nil, &llm.ProviderError{Provider: "failing", Status: 400, Code: "invalid_request", Message: f.msg}
}
func (f failingProvider) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	return func(yield func(llm.StreamEvent, error) bool) {
		_, err := f.Generate(ctx, req)
		yield(llm.StreamEvent{}, err)
	}
}

// Secrets reached the store through fields redaction did not cover: a
// refused response kept as evidence, an interruption's reason that quotes
// a tool error, Result.Data, an operator's result data, error messages;
// and key variants (auth_tokens, tokenValue, session_id) were not matched
// (issue 10, break 3). This test plants a secret in each of those places,
// then greps the SQLite files, every PostgreSQL row, and every event any
// sink received.
func TestSecretsReachNoStore(t *testing.T) {
	t.Parallel()
	for _, bk := range backends() {
		t.Run(bk.name, func(t *testing.T) {
			bk.available(t)
			t.Parallel()
			ctx := context.Background()
			tg := bk.new(t)
			s, err := tg.open(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var emitted []string
			sink := actoviq.EventSinkFunc(func(_ context.Context, ev actoviq.Event) {
				b, _ := json.Marshal(ev)
				mu.Lock()
				emitted = append(emitted, string(b))
				mu.Unlock()
			})
			rt, err := actoviq.New(s, &actoviq.Config{LeaseTTL: leaseTTL, Sinks: []actoviq.EventSink{sink}})
			if err != nil {
				t.Fatal(err)
			}
			variants := fmt.Sprintf(`{"auth_tokens":["%[1]sv1"],"tokenValue":"%[1]sv2","x-api-key":"%[1]sv3","client_secret":"%[1]sv4","private_key":"%[1]sv5","session_id":"%[1]sv6","card_token":"%[1]sv7"}`, plant)
			run := func(name string, p llm.Provider, tools ...tool.Tool) *actoviq.RunResult {
				t.Helper()
				a := &actoviq.AgentSpec{ID: "hygiene", Model: "scripted-1", Provider: p, Tools: tools}
				res, err := rt.Run(ctx, a, &actoviq.Input{RunID: name, Items: []item.Item{item.UserText("go")}})
				if err != nil {
					t.Fatalf("run %s: %v", name, err)
				}
				return res
			}
			tc := func(id, name, args string) scripted.ToolCall {
				return scripted.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
			}
			done := scripted.Turn{Text: "done"}

			// 1. A refused response (one call id, two different argument
			// sets), kept as evidence; and an invalid item.
			echo := &hygieneTool{name: "echo", effect: tool.Read, res: tool.Result{Content: "ok"}}
			if res := run("refused", scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{tc("c1", "echo", variants), tc("c1", "echo", `{"api_key":"`+plant+`r2"}`)}}), echo); !errors.Is(res.Error, actoviq.ErrModelBehavior) {
				t.Fatalf("refused: %+v", res)
			}
			if res := run("invalid", scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{tc("c1", "", variants)}}), echo); !errors.Is(res.Error, actoviq.ErrModelBehavior) {
				t.Fatalf("invalid: %+v", res)
			}
			// 2. Arguments that are not JSON, holding a secret.
			run("malformed", scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{tc("c1", "echo", `{"password":"`+plant+`m1", "n":`)}}, done), echo)

			// 3. Result.Data with secret keys, for a call whose
			// arguments use every key variant.
			data := &hygieneTool{name: "fetch", effect: tool.Read, res: tool.Result{Content: "fetched",
				Data: json.RawMessage(`{"access_token":"` + plant + `d1","tokenValue":"` + plant + `d2","rows":3}`)}}
			run("data", scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{tc("c1", "fetch", variants)}}, done), data)

			// 4. A tool error that quotes a credential and echoes a secret
			// argument, with an unknown outcome: the interruption's reason.
			// Then an operator's result data with a secret.
			charge := &hygieneTool{name: "charge", effect: tool.SideEffect, evidence: "looked it up with token=" + plant + "p1",
				err: func(args json.RawMessage) error {
					var in struct {
						CardToken string `json:"card_token"`
					}
					_ = json.Unmarshal(args, &in)
					return fmt.Errorf("POST /charge for card %s: Authorization: Bearer %se1abcdef reset: %w", in.CardToken, plant, tool.ErrOutcomeUnknown)
				}}
			chargeAgent := &actoviq.AgentSpec{ID: "hygiene", Model: "scripted-1", Tools: []tool.Tool{charge},
				Provider: scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{tc("c1", "charge", variants)}}, done)}
			res := run("unknown", chargeAgent.Provider, charge)
			if res.Status != actoviq.StatusInterrupted || !strings.Contains(res.Interruptions[0].Reason, "[REDACTED]") {
				t.Fatalf("unknown: %+v", res)
			}
			// The probe's evidence quotes a token.
			res, err = rt.Resume(ctx, chargeAgent, "unknown", nil)
			if err != nil || res.Interruptions[0].Probe == nil {
				t.Fatalf("probe: %+v %v", res, err)
			}
			res, err = rt.Resume(ctx, chargeAgent, "unknown", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideCommitted, By: "ops",
				Result: "charged", ResultData: json.RawMessage(`{"receipt":"r-1","client_secret":"` + plant + `o1"}`),
				Reason: "checked the PSP, api_key=" + plant + "o2", Note: "x-api-key: " + plant + "o3"}}})
			if err != nil || res.Status != actoviq.StatusCompleted {
				t.Fatalf("committed: %+v %v", res, err)
			}

			// 5. A tool error with a known outcome, and a provider error:
			// error messages.
			fails := &hygieneTool{name: "lookup", effect: tool.Read, err: func(json.RawMessage) error {
				return fmt.Errorf("upstream refused x-api-key: %sk1", plant)
			}}
			run("toolerr", scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{tc("c1", "lookup", `{}`)}}, done), fails)
			if res := run("provider", failingProvider{msg: "invalid api_key=" + plant + "q1 for this project"}); res.Status != actoviq.StatusFailed || !strings.Contains(res.Error.Message, "[REDACTED]") {
				t.Fatalf("provider: %+v", res.Error)
			}

			// Positive controls: the places exist and hold the placeholder.
			info, err := rt.Get(ctx, "data")
			if err != nil {
				t.Fatal(err)
			}
			if r := info.Ledger[0]; !strings.Contains(string(r.Result), `"access_token":"[REDACTED]"`) || !strings.Contains(string(r.Args), `"session_id":"[REDACTED]"`) {
				t.Fatalf("data entry: result %s args %s", r.Result, r.Args)
			}

			rt.Close()
			all := strings.Join(emitted, "\n")
			if len(emitted) < 20 {
				t.Fatalf("only %d events reached the sink", len(emitted))
			}
			if i := strings.Index(all, plant); i >= 0 {
				t.Errorf("an emitted event holds a planted secret: …%s…", all[max(0, i-300):min(len(all), i+60)])
			}
			switch tg.Kind {
			case "pg":
				grepPG(t, ctx, s.(*storepg.Store), tg.Schema)
				s.Close()
			case "sqlite":
				s.Close()
				for _, suffix := range []string{"", "-wal", "-shm"} {
					raw, err := os.ReadFile(tg.DSN + suffix)
					if err != nil && !os.IsNotExist(err) {
						t.Fatal(err)
					}
					if i := strings.Index(string(raw), plant); i >= 0 {
						t.Errorf("%s%s holds a planted secret: …%q…", tg.DSN, suffix, raw[max(0, i-200):min(len(raw), i+40)])
					}
				}
			}
		})
	}
}

// grepPG reads every row of every table of the schema as text.
func grepPG(t *testing.T, ctx context.Context, s *storepg.Store, schema string) {
	t.Helper()
	rows, err := s.Pool().Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = $1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	if len(tables) < 4 {
		t.Fatalf("schema %s has tables %v", schema, tables)
	}
	seen := 0
	for _, tb := range tables {
		rows, err := s.Pool().Query(ctx, fmt.Sprintf(`SELECT t::text FROM %q.%q t`, schema, tb))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var row string
			if err := rows.Scan(&row); err != nil {
				t.Fatal(err)
			}
			seen++
			if i := strings.Index(row, plant); i >= 0 {
				t.Errorf("table %s holds a planted secret: …%s…", tb, row[max(0, i-200):min(len(row), i+40)])
			}
		}
		rows.Close()
	}
	if seen < 20 {
		t.Fatalf("only %d rows in schema %s", seen, schema)
	}
}
