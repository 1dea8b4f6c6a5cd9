package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/actoviq/actoviq-go/tool"
)

func ExampleFunc() {
	type in struct {
		To     string `json:"to"`
		Amount int    `json:"amount"`
	}
	type out struct {
		TransferID string `json:"transfer_id"`
	}
	transfer := tool.Func(tool.Spec{Name: "transfer", Description: "Move money."},
		func(ctx context.Context, in in) (out, error) {
			// Hand the key to the bank so it can dedupe a repeated attempt.
			return out{TransferID: "tx-" + tool.IdempotencyKey(ctx)}, nil
		})

	r, err := tool.NewRunner([]tool.Tool{transfer}, nil)
	if err != nil {
		panic(err)
	}
	res, err := r.Run(context.Background(), &tool.Call{
		Name: "transfer", Args: json.RawMessage(`{"to":"bob","amount":5}`), Key: "run1:call1",
	})
	fmt.Println(res.Content, err)

	_, err = r.Run(context.Background(), &tool.Call{Name: "transfer", Args: json.RawMessage(`{"to":5}`)})
	var te *tool.Error
	if errors.As(err, &te) {
		fmt.Println(te.Kind, len(te.Violations), errors.Is(err, tool.ErrValidation))
	}
	// Output:
	// {"transfer_id":"tx-run1:call1"} <nil>
	// validation 2 true
}

func ExampleRunner_Run_approval() {
	del := tool.Func(tool.Spec{Name: "delete_repo", RequireApproval: true},
		func(ctx context.Context, in struct{}) (string, error) { return "deleted", nil })
	r, _ := tool.NewRunner([]tool.Tool{del}, nil)

	_, err := r.Run(context.Background(), &tool.Call{Name: "delete_repo"})
	fmt.Println(errors.Is(err, tool.ErrApprovalRequired))

	res, err := r.Run(context.Background(), &tool.Call{Name: "delete_repo", Approved: true})
	fmt.Println(res.Content, err)
	// Output:
	// true
	// deleted <nil>
}

func ExampleEffect() {
	// A tool that declares no effect is a side-effect tool.
	var s tool.Spec
	fmt.Println(s.Effect)
	b, _ := json.Marshal(tool.IdempotentWrite)
	fmt.Println(string(b))
	// Output:
	// side-effect
	// "idempotent-write"
}
