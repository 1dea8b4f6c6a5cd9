package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/actoviq/actoviq-go/tool"
)

func TestRecordHandleValidates(t *testing.T) {
	var got []tool.Handle
	ctx := tool.WithHandleRecorder(context.Background(), tool.HandleRecorderFunc(func(_ context.Context, h tool.Handle) error {
		got = append(got, h)
		return nil
	}))
	for _, h := range []tool.Handle{
		{},
		{Kind: "x", Data: json.RawMessage(`[1]`)},
		{Kind: "x", Data: json.RawMessage(`{"a":`)},
		{Kind: "x", Evidence: strings.Repeat("e", tool.MaxHandleSize+1)},
	} {
		if err := tool.RecordHandle(ctx, h); err == nil {
			t.Errorf("RecordHandle(%.40v) = nil, want an error", h)
		}
	}
	if len(got) != 0 {
		t.Fatalf("an invalid handle reached the recorder: %v", got)
	}
	want := tool.Handle{Kind: "x", Data: json.RawMessage(`{"id":"1"}`), Evidence: "job 1"}
	if err := tool.RecordHandle(ctx, want); err != nil || len(got) != 1 || got[0].Kind != "x" || string(got[0].Data) != `{"id":"1"}` {
		t.Fatalf("RecordHandle: %v, %v", err, got)
	}
	boom := errors.New("store down")
	failing := tool.WithHandleRecorder(context.Background(), tool.HandleRecorderFunc(func(context.Context, tool.Handle) error { return boom }))
	if err := tool.RecordHandle(failing, want); !errors.Is(err, boom) {
		t.Fatalf("a failed write: %v", err)
	}
	if err := tool.RecordHandle(context.Background(), want); !errors.Is(err, tool.ErrNoRecorder) {
		t.Fatalf("no recorder: %v", err)
	}
}
