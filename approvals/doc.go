// Package approvals says who may decide what about a waiting tool call: a
// file-configured policy of named approvers and groups, checked against the
// name a decision is recorded under, with a Go hook for teams whose groups
// live in an identity provider.
//
// An agent's actoviq.ApprovalPolicy says which calls wait for a person.
// This package says which person: who may approve, reject or settle
// (committed, failed, re-execute) the calls of which tools, effects or
// agents; how many distinct people must approve; how long an approval
// stays good before the call starts; and how long a call may wait for a
// decision before it is escalated. The runtime (actoviq.Config.Approvers)
// checks every decision against it, whichever surface recorded it (the
// console, the CLI or a Go program), and a refused decision says why.
//
// A policy file is JSON:
//
//	{
//	  "version": "2026-12-01",
//	  "groups": {
//	    "finance": ["alice", "bob"],
//	    "oncall":  ["carol", "dave"]
//	  },
//	  "rules": [
//	    {"name": "payments", "tools": ["pay", "refund"],
//	     "approve": ["group:finance"], "reject": ["group:finance", "group:oncall"],
//	     "settle": ["group:finance"],
//	     "approvers": 2, "approval_ttl": "24h", "escalate_after": "30m",
//	     "escalate_to": ["group:oncall"]},
//	    {"name": "other side effects", "effects": ["side-effect"],
//	     "approve": ["group:oncall"], "reject": ["group:oncall"], "settle": ["group:oncall"]},
//	    {"name": "everything else", "approve": ["*"], "reject": ["*"], "settle": ["*"]}
//	  ]
//	}
//
// The first rule whose selectors all match a call governs it: "tools",
// "effects" and "agents" each list names (a trailing * matches a prefix;
// an absent list matches anything). A call no rule matches may be decided
// by nobody, so a policy ends with a catch-all rule when that is wanted.
// "approve", "reject" and "settle" list who may take each decision: a name,
// "group:NAME", or "*" for anyone with a name. "approvers" (default 1) is
// how many distinct people must approve before the call may start.
// "approval_ttl" (Go duration; default none) is how long an approval stays
// good for a call that has not started; after it the approval is void,
// recorded as expired, and the call asks again. "escalate_after" (default
// none) is how long a call may wait for its approval before the runtime
// escalates it (an event, actoviq.EvApprovalEscalated, and a mark in the
// inbox), naming "escalate_to".
//
// "version" names the policy in every decision recorded under it; when it
// is absent the version is "sha256:" and the first 16 hex digits of the
// file's digest, so any change to the file changes it.
//
// Teams with an identity provider set [Policy].Directory: the groups it
// returns for a name count as well as the file's. A team that wants its
// own rules altogether implements [Authorizer].
package approvals
