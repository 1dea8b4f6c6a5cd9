package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store/storesqlite"
	"github.com/actoviq/actoviq-go/tool"
)

// askTool records where it stands and asks a person; Resume acts on the
// answer.
type askTool struct{ got []string }

func (a *askTool) Spec() tool.Spec { return tool.Spec{Name: "transfer", Effect: tool.SideEffect} }

func (a *askTool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	if err := tool.RecordHandle(ctx, tool.Handle{Kind: "ask", Data: json.RawMessage(`{"step":"asked"}`)}); err != nil {
		return tool.Result{}, err
	}
	return tool.Result{}, &tool.InputError{Prompt: "Move 5 EUR?"}
}

func (a *askTool) Resume(ctx context.Context, _ string, args json.RawMessage, _ tool.Handle) (tool.Result, error) {
	if tool.Answer(ctx) == nil {
		return a.Call(ctx, args)
	}
	a.got = append(a.got, string(tool.Answer(ctx)))
	return tool.Result{Content: "moved"}, nil
}

func TestResolveAnswer(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	open := func() (*actoviq.Runtime, func()) {
		st, err := storesqlite.Open(db, nil)
		if err != nil {
			t.Fatal(err)
		}
		rt, err := actoviq.New(st, nil)
		if err != nil {
			t.Fatal(err)
		}
		return rt, func() { rt.Close(); st.Close() }
	}
	ask := &askTool{}
	agent := &actoviq.AgentSpec{ID: "a", Model: "scripted-1", Tools: []tool.Tool{ask}, Provider: scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "transfer", Arguments: json.RawMessage(`{}`)}}}, scripted.Turn{Text: "done"})}
	rt, done := open()
	res, err := rt.Run(context.Background(), agent, &actoviq.Input{RunID: "run-a", Items: []item.Item{item.UserText("go")}})
	done()
	if err != nil || res.Status != actoviq.StatusInterrupted || res.Interruptions[0].Kind != actoviq.InterruptInput {
		t.Fatalf("run: %+v %v", res, err)
	}
	run := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		e := &env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }, executable: os.Executable}
		return e.main(context.Background(), args), out.String() + errb.String()
	}
	if code, out := run("resolve", "run-a", "c1", "--answer", "{", "--store", "sqlite:"+db); code != ExitUsage {
		t.Fatalf("bad JSON: exit %d %s", code, out)
	}
	if code, out := run("resolve", "run-a", "c1", "--answer", `{"ok":true}`, "--failed", "--message", "x", "--store", "sqlite:"+db); code != ExitUsage {
		t.Fatalf("two kinds: exit %d %s", code, out)
	}
	if code, out := run("resolve", "run-a", "c1", "--answer", `{"ok":true}`, "--by", "ops", "--store", "sqlite:"+db); code != 0 || !strings.Contains(out, "recorded answer for call c1 of run run-a by ops") {
		t.Fatalf("answer: exit %d %s", code, out)
	}
	rt, done = open()
	defer done()
	res, err = rt.Resume(context.Background(), agent, "run-a", nil)
	if err != nil || res.Status != actoviq.StatusCompleted || strings.Join(ask.got, ",") != `{"ok":true}` {
		t.Fatalf("resume: %+v %v; the tool got %v", res, err, ask.got)
	}
}
