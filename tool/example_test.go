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

// jobTool submits a job to a far side that answers with a job id at once
// and finishes later. It records the id on its ledger entry before waiting,
// and implements Resumer, so that after a crash the runtime asks the far
// side about the job instead of submitting it again.
type jobTool struct{ jobs map[string]string } // job id → result, the far side

func (j *jobTool) Spec() tool.Spec { return tool.Spec{Name: "render", Effect: tool.SideEffect} }

func (j *jobTool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	id := "job-" + tool.IdempotencyKey(ctx) // the far side's answer
	j.jobs[id] = "rendered"
	data, _ := json.Marshal(map[string]string{"job": id})
	// Durable before anything else happens; a crash from here on finds it.
	if err := tool.RecordHandle(ctx, tool.Handle{Kind: "render.job", Data: data, Evidence: "job " + id}); err != nil {
		return tool.Result{}, fmt.Errorf("job %s submitted, handle not recorded: %w: %w", id, err, tool.ErrOutcomeUnknown)
	}
	return j.Resume(ctx, tool.IdempotencyKey(ctx), args, tool.Handle{Kind: "render.job", Data: data})
}

func (j *jobTool) Resume(ctx context.Context, key string, args json.RawMessage, h tool.Handle) (tool.Result, error) {
	var d struct {
		Job string `json:"job"`
	}
	if err := json.Unmarshal(h.Data, &d); err != nil {
		return tool.Result{}, fmt.Errorf("unreadable handle: %w", tool.ErrOutcomeUnknown)
	}
	res, ok := j.jobs[d.Job] // poll the far side; never submit again
	if !ok {
		return tool.Result{}, fmt.Errorf("the far side no longer knows %s: %w", d.Job, tool.ErrOutcomeUnknown)
	}
	return tool.Result{Content: d.Job + ": " + res}, nil
}

func ExampleRecordHandle() {
	j := &jobTool{jobs: map[string]string{}}
	// The runtime installs a recorder that writes to the call's ledger
	// entry; this one prints.
	rec := tool.HandleRecorderFunc(func(_ context.Context, h tool.Handle) error {
		fmt.Println("recorded:", h.Kind, h.Evidence)
		return nil
	})
	ctx := tool.WithHandleRecorder(tool.WithIdempotencyKey(context.Background(), "run-1:call-1"), rec)
	res, err := j.Call(ctx, nil)
	fmt.Println(res.Content, err)

	// After a crash, recovery hands the stored handle to Resume.
	res, err = j.Resume(ctx, "run-1:call-1", nil, tool.Handle{Kind: "render.job", Data: json.RawMessage(`{"job":"job-run-1:call-1"}`)})
	fmt.Println(res.Content, err)
	_, err = j.Resume(ctx, "run-1:call-1", nil, tool.Handle{Kind: "render.job", Data: json.RawMessage(`{"job":"job-gone"}`)})
	fmt.Println(errors.Is(err, tool.ErrOutcomeUnknown))

	// Without a recorder (a bare Runner), RecordHandle says so.
	err = tool.RecordHandle(context.Background(), tool.Handle{Kind: "render.job"})
	fmt.Println(errors.Is(err, tool.ErrNoRecorder))
	// Output:
	// recorded: render.job job job-run-1:call-1
	// job-run-1:call-1: rendered <nil>
	// job-run-1:call-1: rendered <nil>
	// true
	// true
}
