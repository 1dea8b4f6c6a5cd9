package approvals_test

import (
	"context"
	"fmt"

	"github.com/actoviq/actoviq-go/approvals"
)

// Payments need two people from finance; anything else, anyone named.
func Example() {
	p, err := approvals.Parse([]byte(`{
	  "version": "2026-12-01",
	  "groups": {"finance": ["alice", "bob"]},
	  "rules": [
	    {"name": "payments", "tools": ["pay"], "approve": ["group:finance"], "reject": ["group:finance"],
	     "settle": ["group:finance"], "approvers": 2, "approval_ttl": "24h", "escalate_after": "30m"},
	    {"name": "default", "approve": ["*"], "reject": ["*"], "settle": ["*"]}
	  ]}`))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	pay := approvals.Call{RunID: "inv-42", AgentID: "payer", CallID: "call_pay", Tool: "pay", Effect: "side-effect"}
	req := p.Require(ctx, &pay)
	fmt.Println(req.Rule, req.Approvers, req.TTL, req.EscalateAfter)
	fmt.Println(p.Authorize(ctx, &approvals.Request{Action: approvals.Approve, By: "carol", Call: pay}))
	fmt.Println(p.Authorize(ctx, &approvals.Request{Action: approvals.Approve, By: "alice", Call: pay}))
	fmt.Println(p.Authorize(ctx, &approvals.Request{Action: approvals.Approve, By: "alice", Call: pay, Approvers: []string{"alice"}}))
	// Output:
	// payments 2 24h0m0s 30m0s
	// carol may not approve call call_pay of pay (side-effect): the rule lets group:finance approve; carol is not one of them (approvals policy 2026-12-01, rule "payments")
	// <nil>
	// alice may not approve call call_pay of pay (side-effect): alice already approved this call, and the rule needs 2 distinct approvers (approvals policy 2026-12-01, rule "payments")
}
