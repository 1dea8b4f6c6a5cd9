package actoviq_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
)

// A call whose arguments hold a secret is approved and run by another
// process: the codec seals the arguments in the run, the store never sees
// the secret in clear, and the tool gets the real value under the call's
// key.
func ExampleNewSealCodec() {
	ctx := context.Background()
	st := storemem.New(nil)
	key := bytes.Repeat([]byte{7}, 32) // in production: 32 random bytes from a secret store
	charge := tool.Func(tool.Spec{Name: "charge", Effect: tool.SideEffect, RequireApproval: true},
		func(ctx context.Context, in struct {
			Amount    int    `json:"amount"`
			CardToken string `json:"card_token"`
		}) (string, error) {
			fmt.Println("charged with", in.CardToken, "under", tool.IdempotencyKey(ctx))
			return "ok", nil
		})
	agent := &actoviq.AgentSpec{ID: "biller", Model: "scripted", Tools: []tool.Tool{charge}, Provider: scripted.New(
		scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "charge", Arguments: json.RawMessage(`{"amount":5,"card_token":"tok_live_42"}`)}}},
		scripted.Turn{Text: "Charged."})}
	process := func() *actoviq.Runtime { // each call is a new process
		codec, _ := actoviq.NewSealCodec(key)
		rt, _ := actoviq.New(st, &actoviq.Config{Codec: codec})
		return rt
	}
	first := process()
	res, _ := first.Run(ctx, agent, &actoviq.Input{RunID: "r1"})
	first.Close()
	fmt.Println(res.Status, res.Interruptions[0].Kind, string(res.Interruptions[0].Args))

	second := process()
	defer second.Close()
	res, _ = second.Resume(ctx, agent, "r1", &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "c1", Kind: actoviq.DecideApprove, By: "alice"}}})
	info, _ := second.Get(ctx, "r1")
	stored, _ := json.Marshal(info)
	fmt.Println(res.Status, "secret in store:", strings.Contains(string(stored), "tok_live_42"))
	// Output:
	// interrupted approval {"amount":5,"card_token":"[REDACTED]"}
	// charged with tok_live_42 under r1:c1
	// completed secret in store: false
}
