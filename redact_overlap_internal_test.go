package actoviq

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
)

// Text and JSON that quote a call's secret argument values lose them
// whole, whatever their order, also when one secret starts another: the
// longest is replaced first (redact.Secrets). drive_redact.go's own loop
// replaced them in the order the arguments held them, so the shorter one
// cut the longer one apart and its tail ("-and-more") was stored.
func TestRedactOverlappingSecretValues(t *testing.T) {
	rt, err := New(storemem.New(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	d := &drive{rt: rt, rawArgs: map[string]json.RawMessage{
		"c1": json.RawMessage(`{"user":"ada","passwords":["hunter2-secret","hunter2-secret-and-more"]}`)}}
	if got := d.redactText("c1", "login failed for ada with hunter2-secret-and-more"); got != "login failed for ada with [REDACTED]" {
		t.Errorf("text = %q", got)
	}
	dec := d.redactDecision("c1", &store.DecisionRecord{Kind: "commit", By: "op",
		Result: json.RawMessage(`{"echo":"hunter2-secret-and-more","again":"hunter2-secret"}`)})
	if s := string(dec.Result); strings.Contains(s, "hunter2") || strings.Contains(s, "and-more") || !json.Valid(dec.Result) {
		t.Errorf("decision result = %s", s)
	}
}
