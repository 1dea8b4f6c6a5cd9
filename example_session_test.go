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
// here the last 2 items, the previous question and its answer; the run
// says how many earlier items it left out (RunInfo.SessionOmitted). Left
// at 0, the window is the runtime's default, DefaultSessionWindow (1,000
// items); WholeSession takes every item.
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
	fmt.Printf("started from session revision %d, took %d of its items, left out %d:\n", info.SessionRevision, info.SessionItems, info.SessionOmitted)
	for _, it := range info.Transcript {
		fmt.Printf("  %s: %s\n", it.Role, it.Text)
	}
	run, _ := st.RunGet(ctx, &store.RunGetParams{Tenant: rt.Tenant(), ID: "q4"})
	fmt.Println("items stored with the run:", len(run.Log))
	// Output:
	// You like tea.
	// started from session revision 6, took 2 of its items, left out 4:
	//   user: I like tea.
	//   assistant: Noted.
	//   user: What do I like?
	//   assistant: You like tea.
	// items stored with the run: 2
}

// Config.SessionWindow sets the session window of every agent that sets
// none: here 4 items, so a run of a long conversation reads, holds and
// sends the model only its last turns, and says what it left out. An
// agent that must see everything asks for WholeSession.
func ExampleConfig_sessionWindow() {
	ctx := context.Background()
	st := storemem.New(nil)
	rt, _ := actoviq.New(st, &actoviq.Config{SessionWindow: 4})
	defer rt.Close()
	for i := range 5 {
		model := scripted.New(append(make([]scripted.Turn, min(i, 2)), scripted.Turn{Text: fmt.Sprintf("answer %d", i+1)})...)
		agent := &actoviq.AgentSpec{ID: "chat", Provider: model, Model: "scripted"}
		if _, err := rt.Run(ctx, agent, &actoviq.Input{RunID: fmt.Sprint("r", i+1), SessionID: "s", Items: []item.Item{item.UserText(fmt.Sprint("question ", i+1))}}); err != nil {
			panic(err)
		}
	}
	for _, id := range []string{"r1", "r5"} {
		info, _ := rt.Get(ctx, id)
		fmt.Printf("%s: from revision %d, %d items of the session, %d left out\n", id, info.SessionRevision, info.SessionItems, info.SessionOmitted)
	}
	model := scripted.New(append(make([]scripted.Turn, 5), scripted.Turn{Text: "all of it"})...)
	whole := &actoviq.AgentSpec{ID: "chat", Provider: model, Model: "scripted", SessionWindow: actoviq.WholeSession}
	if _, err := rt.Run(ctx, whole, &actoviq.Input{RunID: "all", SessionID: "s", Items: []item.Item{item.UserText("everything?")}}); err != nil {
		panic(err)
	}
	info, _ := rt.Get(ctx, "all")
	fmt.Printf("all: from revision %d, %d items of the session, %d left out\n", info.SessionRevision, info.SessionItems, info.SessionOmitted)
	// Output:
	// r1: from revision 0, 0 items of the session, 0 left out
	// r5: from revision 8, 4 items of the session, 4 left out
	// all: from revision 10, 10 items of the session, 0 left out
}
