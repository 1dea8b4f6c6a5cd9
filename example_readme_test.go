package actoviq_test

import (
	"context"
	"encoding/json"
	"fmt"
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

// Payment is what the model asks the pay tool to send.
type Payment struct {
	To     string `json:"to"`
	Amount int    `json:"amount"`
}

// fakeBank stands in for a payments API that dedupes on the key it gets.
type fakeBank struct{ byKey map[string]string }

func (b *fakeBank) Pay(_ context.Context, p Payment, key string) (string, error) {
	if id, ok := b.byKey[key]; ok {
		return id, nil // the same key again: the same payment, not a second one
	}
	b.byKey[key] = fmt.Sprintf("p-%d", len(b.byKey)+1)
	return fmt.Sprintf("sent %d to %s as %s", p.Amount, p.To, b.byKey[key]), nil
}

// The README's "A first Go program" section is the part of this example between the
// readme markers (TestReadmeSnippet keeps the two equal): a side-effect
// tool that hands its key to the bank, a SQLite store, an approval, and the
// resume after it.
func Example_readme() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "actoviq-readme")
	defer os.RemoveAll(dir)
	dbPath := filepath.Join(dir, "actoviq.db")
	bank := &fakeBank{byKey: map[string]string{}}
	provider := scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "pay", Arguments: json.RawMessage(`{"to":"ada","amount":5}`)}}},
		scripted.Turn{Text: "Paid ada 5."},
	)

	// readme:begin
	pay := tool.Func(tool.Spec{Name: "pay", Description: "Send money", Effect: tool.SideEffect},
		func(ctx context.Context, p Payment) (string, error) {
			// Hand the key to the target so it can dedupe.
			return bank.Pay(ctx, p, tool.IdempotencyKey(ctx))
		})
	st, err := storesqlite.Open(dbPath, nil)
	if err != nil {
		panic(err)
	}
	defer st.Close() // the runtime does not own the store: close it after the runtime
	rt, err := actoviq.New(st, nil)
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	agent := &actoviq.AgentSpec{ID: "payer", Provider: provider, Model: "gpt-4.1",
		Tools:    []tool.Tool{pay},
		Approval: actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}}
	res, err := rt.Run(ctx, agent, &actoviq.Input{RunID: "inv-42", Items: []item.Item{item.UserText("pay ada 5")}})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.Interruptions[0].Kind, res.Interruptions[0].Tool) // interrupted approval pay
	// Later, maybe in another process, after a person looked at it:
	err = rt.Decide(ctx, res.RunID, actoviq.Decision{CallID: res.Interruptions[0].CallID,
		Kind: actoviq.DecideApprove, By: "alice", Reason: "invoice 42"})
	if err != nil {
		panic(err)
	}
	res, err = rt.Resume(ctx, agent, res.RunID, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.Output[0].Text) // completed Paid ada 5.
	// readme:end

	// Output:
	// interrupted approval pay
	// completed Paid ada 5.
}

// The README's Go snippet is the compiled example above, verbatim (less
// one level of indentation), so it cannot rot.
func TestReadmeSnippet(t *testing.T) {
	src, err := os.ReadFile("example_readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	begin := strings.Index(s, "\t// readme:begin\n")
	end := strings.Index(s, "\t// readme:end\n")
	if begin < 0 || end < begin {
		t.Fatal("readme markers missing from example_readme_test.go")
	}
	var want []string
	for _, l := range strings.Split(strings.TrimRight(s[begin+len("\t// readme:begin\n"):end], "\n"), "\n") {
		want = append(want, strings.TrimPrefix(l, "\t"))
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	r := string(readme)
	sec := strings.Index(r, "## A first Go program")
	if sec < 0 {
		t.Fatal(`README.md has no "## A first Go program" section`)
	}
	start := strings.Index(r[sec:], "```go\n")
	if start < 0 {
		t.Fatal(`"## A first Go program" has no go code block`)
	}
	body := r[sec+start+len("```go\n"):]
	stop := strings.Index(body, "```")
	got := strings.TrimRight(body[:stop], "\n")
	if got != strings.Join(want, "\n") {
		t.Fatalf("README \"A first Go program\" snippet differs from Example_readme; paste this into README.md:\n%s", strings.Join(want, "\n"))
	}
}
