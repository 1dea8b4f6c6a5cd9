package actoviq

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// marshalToolCallData gives json.Marshal's bytes whenever it says it can.
func FuzzMarshalToolCallData(f *testing.F) {
	f.Add("c1", "pay", 2, "started", "t:r:c1", 1, []byte(`{"to":"ada","n":[1,2]}`), false, "")
	f.Add("call_t1_0", "noop", 0, "committed", "k", 0, []byte(`{}`), true, "probe")
	f.Add("c\"q", "x<y", 1, "prepared", "ké", 3, []byte(`{"a": 1}`), false, "committed")
	f.Add("c", "t", 2, "unknown", "k", 1, []byte(`{"a":"<b>"}`), false, "")
	f.Add("c", "t", 2, "unknown", "k", 1, []byte(`{"a":"x\" y"}`), false, "")
	f.Add("c", "t", 9, "failed", "k\n", -1, []byte(nil), false, "not-run")
	f.Add("c", "t", 1, "started", "k", 1, []byte("{\"a\":\"\u2028\"}"), false, "")
	f.Fuzz(func(t *testing.T, callID, tl string, effect int, state, key string, attempt int, args []byte, isErr bool, res string) {
		if len(args) > 0 && !json.Valid(args) {
			return // the store refuses such arguments whatever the event says
		}
		d := &ToolCallData{CallID: callID, Tool: tl, Effect: tool.Effect(effect), State: store.LedgerState(state),
			IdempotencyKey: key, Attempt: attempt, Args: args, IsError: isErr, Resolution: res}
		got, ok := marshalToolCallData(d)
		if !ok {
			return
		}
		want, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("%+v: fast path took data json.Marshal refuses: %v", d, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("fast %s\nwant %s", got, want)
		}
	})
}

// The common transition takes the fast path.
func TestMarshalToolCallDataFastPath(t *testing.T) {
	d := &ToolCallData{CallID: "c1", Tool: "pay", Effect: tool.SideEffect, State: store.LedgerStarted,
		IdempotencyKey: "default:r:c1", Attempt: 1, Args: json.RawMessage(`{"to":"ada","amount":[1,2.5,true,null]}`)}
	got, ok := marshalToolCallData(d)
	want, _ := json.Marshal(d)
	if !ok || !bytes.Equal(got, want) {
		t.Fatalf("fast path %v %s, want %s", ok, got, want)
	}
}

// The fast paths size their buffers exactly when no string needs an
// escape: the memory store keeps these bytes as they are, spare room too.
func TestMarshalFastPathExactSize(t *testing.T) {
	for _, d := range []*ToolCallData{
		{CallID: "c1", Tool: "pay", Effect: tool.SideEffect, State: store.LedgerStarted, IdempotencyKey: "r:c1", Attempt: 1, Args: json.RawMessage(`{"to":"ada"}`)},
		{CallID: "call_t1_0", Tool: "noop", Effect: tool.Read, State: store.LedgerPrepared, IdempotencyKey: "t/r:c", Attempt: 0},
		{CallID: "c", Tool: "t", Effect: tool.IdempotentWrite, State: store.LedgerCommitted, IdempotencyKey: "k", Attempt: -12, Args: json.RawMessage(`{}`), IsError: true, Resolution: "probe"},
		{CallID: "c", Tool: "t", Effect: tool.SideEffect, State: store.LedgerCommitted, IdempotencyKey: "k", Attempt: 1234567},
	} {
		b, ok := marshalToolCallData(d)
		if !ok || cap(b) != len(b) {
			t.Errorf("%s (fast path %v): %d bytes in a buffer of %d", b, ok, len(b), cap(b))
		}
	}
	for _, r := range []tool.Result{
		{Content: "ok"},
		{Content: "", IsError: true},
		{Content: "naïve", Data: json.RawMessage(`{"n":[1,2]}`)},
		{Content: "x", Data: json.RawMessage(`"y"`), IsError: true},
	} {
		b, ok := marshalResult(&r)
		if !ok || cap(b) != len(b) {
			t.Errorf("%s (fast path %v): %d bytes in a buffer of %d", b, ok, len(b), cap(b))
		}
	}
}

// marshalResult gives json.Marshal's bytes whenever it says it can, and
// those bytes decode to the result it was given.
func FuzzMarshalResult(f *testing.F) {
	f.Add("ok", []byte(`"ok"`), false)
	f.Add("", []byte(nil), true)
	f.Add("a <b> & \"c\"\n\u2028 é", []byte(`{"k":[1,2.5,null,"x y"]}`), false)
	f.Add("bad \xff utf8", []byte(`{}`), false)
	f.Add("x", []byte(`{"a": 1}`), false)
	f.Add("x", []byte(`"<"`), true)
	f.Fuzz(func(t *testing.T, content string, data []byte, isErr bool) {
		if len(data) > 0 && !json.Valid(data) {
			return // boundResult drops such data before encoding
		}
		r := tool.Result{Content: content, Data: data, IsError: isErr}
		got, ok := marshalResult(&r)
		if !ok {
			return
		}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("%+v: fast path took a result json.Marshal refuses: %v", r, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("fast %s\nwant %s", got, want)
		}
		var back tool.Result
		if err := json.Unmarshal(got, &back); err != nil || back.Content != r.Content || back.IsError != r.IsError || !bytes.Equal(back.Data, r.Data) {
			t.Fatalf("%+v decodes to %+v (%v)", r, back, err)
		}
		// fold's Data is the copy inside the encoded bytes, not r.Data.
		if rd := recordedData(got, &r); !bytes.Equal(rd, r.Data) || (len(rd) > 0 && (&rd[0] == &r.Data[0] || cap(rd) != len(rd))) {
			t.Fatalf("%+v: recorded data %q (cap %d)", r, rd, cap(rd))
		}
	})
}
