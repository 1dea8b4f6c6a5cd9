package console_test

import (
	"context"
	"strings"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/console"
	"github.com/actoviq/actoviq-go/item"
)

func TestChildTree(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	ctx := context.Background()
	f.interrupted(f.rt, "parent")
	if _, err := f.rt.Spawn(ctx, "parent", f.agent, &actoviq.Input{RunID: "child-a", Items: []item.Item{item.UserText("a")}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.rt.Spawn(ctx, "child-a", f.agent, &actoviq.Input{RunID: "grandchild", Items: []item.Item{item.UserText("g")}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.rt.Spawn(ctx, "parent", f.agent, &actoviq.Input{RunID: "child-b", Items: []item.Item{item.UserText("b")}}, nil); err != nil {
		t.Fatal(err)
	}
	var run console.Run
	f.call("GET", "/api/v1/runs/parent", tokenAnon, "").json(t, &run)
	if len(run.Children) != 2 || run.Children[0].ID != "child-a" || run.Children[1].ID != "child-b" ||
		len(run.Children[0].Children) != 1 || run.Children[0].Children[0].ID != "grandchild" || run.Children[0].Status != "queued" {
		t.Fatalf("children: %+v", run.Children)
	}
	var child console.Run
	f.call("GET", "/api/v1/runs/child-a", tokenAnon, "").json(t, &child)
	if child.ParentID != "parent" || len(child.Children) != 1 {
		t.Fatalf("child: parent %q, children %+v", child.ParentID, child.Children)
	}
	b, _ := f.login("bob", tokenAnon)
	page := string(f.callWith(b.c, "GET", "/runs/parent", "", "").body)
	for _, want := range []string{"Child runs", `href="/runs/child-a"`, `href="/runs/grandchild"`, `href="/runs/child-b"`} {
		if !strings.Contains(page, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
}
