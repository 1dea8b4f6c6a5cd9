package actoviq_test

import (
	"context"
	"fmt"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store/storemem"
)

// A list is read a page at a time: Next is the cursor of the following
// page, empty after the last. Finished runs can then be pruned.
func ExampleRuntime_ListPage() {
	ctx := context.Background()
	rt, _ := actoviq.New(storemem.New(nil), nil)
	defer rt.Close()
	for _, id := range []string{"r1", "r2", "r3"} {
		a := &actoviq.AgentSpec{ID: "greeter", Provider: scripted.New(scripted.Turn{Text: "hello"}), Model: "scripted"}
		_, _ = rt.Run(ctx, a, &actoviq.Input{RunID: id, Items: []item.Item{item.UserText("hi")}})
	}
	p := &actoviq.ListParams{Status: actoviq.StatusCompleted, Limit: 2}
	for {
		page, err := rt.ListPage(ctx, p)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, r := range page.Runs {
			fmt.Println(r.ID, r.Status)
		}
		if page.Next == "" {
			break
		}
		p.After = page.Next
	}
	res, _ := rt.Prune(ctx, &actoviq.PruneParams{FinishedBefore: time.Now().Add(time.Hour)})
	fmt.Println("pruned", res.Runs)
	// Output:
	// r3 completed
	// r2 completed
	// r1 completed
	// pruned 3
}
