package actoviq_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
)

// TestListPageNextOnlyWhenMore: a full page has a Next only when a run
// follows it, so paging through N runs k at a time ends without an empty
// page when k divides N.
func TestListPageNextOnlyWhenMore(t *testing.T) {
	ctx := context.Background()
	st := storemem.New(nil)
	rt, err := actoviq.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for i := range 6 {
		if _, err := st.RunCreate(ctx, &store.RunCreateParams{Run: &store.Run{Tenant: store.DefaultTenant, ID: fmt.Sprintf("r%d", i),
			AgentID: "a", AgentDigest: "d", Status: store.RunCompleted, Checkpoint: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ limit, pages int }{{2, 3}, {3, 2}, {6, 1}, {4, 2}, {7, 1}} {
		p := &actoviq.ListParams{Status: actoviq.StatusCompleted, Limit: c.limit}
		seen, pages := 0, 0
		for {
			page, err := rt.ListPage(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			seen += len(page.Runs)
			if len(page.Runs) == 0 {
				t.Fatalf("limit %d: page %d is empty", c.limit, pages)
			}
			if page.Next == "" {
				break
			}
			p.After = page.Next
		}
		if seen != 6 || pages != c.pages {
			t.Errorf("limit %d: %d runs in %d pages, want 6 in %d", c.limit, seen, pages, c.pages)
		}
	}
}

// TestInboxNextOnlyWhenMore: the inbox's pages end without an empty one
// when the page size divides the number of waiting runs.
func TestInboxNextOnlyWhenMore(t *testing.T) {
	ctx := context.Background()
	rt, err := actoviq.New(storemem.New(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for i := range 4 {
		pay := &payTool{name: "pay", effect: tool.SideEffect}
		a := agent(scripted.New(scripted.Turn{ToolCalls: []scripted.ToolCall{call("c1", "pay", `{"amount":1}`)}}, scripted.Turn{Text: "paid"}), pay)
		a.Approval = actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}
		res, err := rt.Run(ctx, a, &actoviq.Input{RunID: fmt.Sprintf("w%d", i), Items: input("pay").Items})
		if err != nil || res.Status != actoviq.StatusInterrupted {
			t.Fatalf("w%d: %v %v", i, res, err)
		}
	}
	for _, c := range []struct{ limit, pages int }{{2, 2}, {4, 1}, {3, 2}, {1, 4}} {
		p := &actoviq.InboxParams{Limit: c.limit}
		seen, pages := 0, 0
		for {
			page, err := rt.Inbox(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if len(page.Runs) == 0 || page.Total != 4 {
				t.Fatalf("limit %d: page %d has %d runs, total %d", c.limit, pages, len(page.Runs), page.Total)
			}
			seen += len(page.Runs)
			if page.Next == "" {
				break
			}
			p.After = page.Next
		}
		if seen != 4 || pages != c.pages {
			t.Errorf("limit %d: %d runs in %d pages, want 4 in %d", c.limit, seen, pages, c.pages)
		}
	}
}
