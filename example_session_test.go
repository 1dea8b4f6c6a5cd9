package actoviq_test

import (
	"context"
	"fmt"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
)

// A run in a session records the session revision it started from and
// stores only its own items, however long the session. SessionWindow
// bounds how much of the session the run takes, hence what the model sees:
// here the last 2 items, the previous question and its answer.
func ExampleAgentSpec_sessionWindow() {
	ctx := context.Background()
	st := storemem.New(nil)
	rt, _ := actoviq.New(st, nil)
	defer rt.Close()
	for i, said := range []string{"Hi, I am Ada.", "I live in London.", "I like tea."} {
		// The scripted model picks its answer by the turns it has seen.
		model := scripted.New(append(make([]scripted.Turn, i), scripted.Turn{Text: "Noted."})...)
		agent := &actoviq.AgentSpec{ID: "chat", Provider: model, Model: "scripted"}
		if _, err := rt.Run(ctx, agent, &actoviq.Input{SessionID: "ada", Items: []item.Item{item.UserText(said)}}); err != nil {
			panic(err)
		}
	}
	model := scripted.New(scripted.Turn{}, scripted.Turn{Text: "You like tea."})
	agent := &actoviq.AgentSpec{ID: "chat", Provider: model, Model: "scripted", SessionWindow: 2}
	res, err := rt.Run(ctx, agent, &actoviq.Input{RunID: "q4", SessionID: "ada", Items: []item.Item{item.UserText("What do I like?")}})
	if err != nil {
		panic(err)
	}
	info, _ := rt.Get(ctx, "q4")
	fmt.Println(res.Output[0].Text)
	fmt.Printf("started from session revision %d, took %d of its items:\n", info.SessionRevision, info.SessionItems)
	for _, it := range info.Transcript {
		fmt.Printf("  %s: %s\n", it.Role, it.Text)
	}
	run, _ := st.RunGet(ctx, &store.RunGetParams{Tenant: rt.Tenant(), ID: "q4"})
	fmt.Println("items stored with the run:", len(run.Log))
	// Output:
	// You like tea.
	// started from session revision 6, took 2 of its items:
	//   user: I like tea.
	//   assistant: Noted.
	//   user: What do I like?
	//   assistant: You like tea.
	// items stored with the run: 2
}
