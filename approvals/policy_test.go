package approvals_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/approvals"
)

const policyFile = `{
  "version": "v1",
  "groups": {"finance": ["alice", "bob"], "oncall": ["carol"]},
  "rules": [
    {"name": "payments", "tools": ["pay", "refund*"], "approve": ["group:finance"], "reject": ["group:finance", "group:oncall"],
     "settle": ["group:finance"], "approvers": 2, "approval_ttl": "24h", "escalate_after": "30m", "escalate_to": ["group:oncall"]},
    {"name": "side effects", "effects": ["side-effect"], "approve": ["group:oncall"], "reject": ["group:oncall"], "settle": ["carol"]},
    {"name": "billing agent", "agents": ["billing"], "approve": ["*"], "reject": ["*"]}
  ]
}`

func load(t *testing.T, text string) *approvals.Policy {
	t.Helper()
	path := filepath.Join(t.TempDir(), "approvals.json")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := approvals.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAuthorize(t *testing.T) {
	p := load(t, policyFile)
	ctx := context.Background()
	pay := approvals.Call{RunID: "r1", AgentID: "payer", CallID: "c1", Tool: "pay", Effect: "side-effect"}
	email := approvals.Call{RunID: "r1", AgentID: "payer", CallID: "c2", Tool: "email", Effect: "side-effect"}
	lookup := approvals.Call{RunID: "r2", AgentID: "billing", CallID: "c3", Tool: "lookup", Effect: "read"}
	other := approvals.Call{RunID: "r3", AgentID: "ops", CallID: "c4", Tool: "lookup", Effect: "read"}
	cases := []struct {
		name      string
		req       approvals.Request
		refused   string // "" when allowed; else a piece of the reason
		rule      string
		approvers int
	}{
		{"finance approves payments", approvals.Request{Action: approvals.Approve, By: "alice", Call: pay}, "", "payments", 2},
		{"prefix pattern", approvals.Request{Action: approvals.Approve, By: "bob", Call: approvals.Call{Tool: "refund_card", Effect: "side-effect"}}, "", "payments", 2},
		{"oncall may not approve payments", approvals.Request{Action: approvals.Approve, By: "carol", Call: pay}, "the rule lets group:finance approve; carol is not one of them", "payments", 2},
		{"oncall may reject payments", approvals.Request{Action: approvals.Reject, By: "carol", Call: pay}, "", "payments", 2},
		{"no second approval by the same person", approvals.Request{Action: approvals.Approve, By: "alice", Call: pay, Approvers: []string{"alice"}}, "alice already approved this call, and the rule needs 2 distinct approvers", "payments", 2},
		{"second approver", approvals.Request{Action: approvals.Approve, By: "bob", Call: pay, Approvers: []string{"alice"}}, "", "payments", 2},
		{"by effect", approvals.Request{Action: approvals.Approve, By: "carol", Call: email}, "", "side effects", 1},
		{"settle by a name", approvals.Request{Action: approvals.Settle, By: "alice", Call: email}, "the rule lets carol settle; alice is not one of them", "side effects", 1},
		{"anyone named, by agent", approvals.Request{Action: approvals.Approve, By: "zed", Call: lookup}, "", "billing agent", 1},
		{"nobody may settle", approvals.Request{Action: approvals.Settle, By: "zed", Call: lookup}, "the rule lets nobody settle these calls", "billing agent", 1},
		{"no rule", approvals.Request{Action: approvals.Approve, By: "alice", Call: other}, "no rule of the policy covers tool lookup", "", 1},
		{"no name", approvals.Request{Action: approvals.Approve, By: " ", Call: pay}, "names nobody", "", 2},
	}
	for _, c := range cases {
		err := p.Authorize(ctx, &c.req)
		if c.refused == "" {
			if err != nil {
				t.Errorf("%s: refused: %v", c.name, err)
			}
		} else {
			var re *approvals.RefusedError
			if !errors.As(err, &re) || !errors.Is(err, approvals.ErrRefused) || !strings.Contains(err.Error(), c.refused) || re.Rule != c.rule || re.Version != "v1" {
				t.Errorf("%s: got %v (%#v), want a refusal saying %q under rule %q", c.name, err, re, c.refused, c.rule)
			}
		}
		if req := p.Require(ctx, &c.req.Call); req.Approvers != c.approvers {
			t.Errorf("%s: requirement %+v, want %d approvers", c.name, req, c.approvers)
		}
	}
	req := p.Require(ctx, &pay)
	if req.Rule != "payments" || req.TTL != 24*time.Hour || req.EscalateAfter != 30*time.Minute || len(req.EscalateTo) != 1 || req.EscalateTo[0] != "group:oncall" {
		t.Fatalf("requirement %+v", req)
	}
	err := p.Authorize(ctx, &approvals.Request{Action: approvals.Approve, By: "carol", Call: pay})
	if want := "carol may not approve call c1 of pay (side-effect): the rule lets group:finance approve; carol is not one of them (approvals policy v1, rule \"payments\")"; err == nil || err.Error() != want {
		t.Fatalf("refusal reads:\n%v\nwant:\n%s", err, want)
	}
}

func TestDirectoryHook(t *testing.T) {
	p := load(t, policyFile)
	asked := 0
	p.Directory = approvals.DirectoryFunc(func(ctx context.Context, name string) ([]string, error) {
		asked++
		switch name {
		case "erin":
			return []string{"finance"}, nil
		case "down":
			return nil, errors.New("idp unreachable")
		}
		return nil, nil
	})
	ctx := context.Background()
	pay := approvals.Call{CallID: "c1", Tool: "pay", Effect: "side-effect"}
	if err := p.Authorize(ctx, &approvals.Request{Action: approvals.Approve, By: "erin", Call: pay}); err != nil {
		t.Fatalf("erin is in finance by the directory: %v", err)
	}
	if err := p.Authorize(ctx, &approvals.Request{Action: approvals.Approve, By: "frank", Call: pay}); !errors.Is(err, approvals.ErrRefused) {
		t.Fatalf("frank: %v", err)
	}
	err := p.Authorize(ctx, &approvals.Request{Action: approvals.Approve, By: "down", Call: pay})
	if !errors.Is(err, approvals.ErrRefused) || !strings.Contains(err.Error(), "idp unreachable") {
		t.Fatalf("directory error: %v", err)
	}
	if err := p.Authorize(ctx, &approvals.Request{Action: approvals.Approve, By: "alice", Call: pay}); err != nil || asked != 3 {
		t.Fatalf("alice is in the file's group (asked the directory %d times): %v", asked, err)
	}
}

func TestParseRefusesBadPolicies(t *testing.T) {
	cases := map[string]string{
		`{"rules": [{"approve": ["*"], "aprovers": 2}]}`: `unknown field "aprovers"`,
		`{"rules": []}`: "no rules",
		`{"rules": [{"approve": ["group:finance"]}]}`:                                   `names group "finance", which the policy does not define`,
		`{"rules": [{"effects": ["write"], "approve": ["*"]}]}`:                         `effect "write"`,
		`{"rules": [{"approve": ["alice"], "approvers": 2}]}`:                           "needs 2 distinct approvers, but approve names only 1 people",
		`{"rules": [{"approve": ["*"], "approval_ttl": "3 days"}]}`:                     `duration "3 days"`,
		`{"rules": [{"name": "a", "approve": ["*"]}, {"name": "a", "approve": ["*"]}]}`: "another rule has that name",
		"{\"rules\": [\n{\"approve\": [\"*\"],}\n]}":                                    "line 2",
	}
	for text, want := range cases {
		_, err := approvals.Parse([]byte(text))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error saying %q", text, err, want)
		}
	}
}

func TestVersionDefaultsToDigest(t *testing.T) {
	a, err := approvals.Parse([]byte(`{"rules": [{"approve": ["*"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := approvals.Parse([]byte(`{"rules": [{"approve": ["alice"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.Version(), "sha256:") || len(a.Version()) != len("sha256:")+16 || a.Version() == b.Version() {
		t.Fatalf("versions %q and %q", a.Version(), b.Version())
	}
}
