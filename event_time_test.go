package actoviq_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
)

// tickClock moves a second forward at every reading: two readings never
// agree.
type tickClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *tickClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// A call's started and committed events are timed by the reading of the
// runtime's clock that stamped the entry (StartedAt, CommittedAt), and
// the prepared events of one response by one reading: a transition and
// its event are one moment, one reading. The clock is years behind the
// wall clock: the store writes' deadlines (Config.CommitTimeout) are
// taken from the wall clock all the same, or no write would be accepted.
func TestTransitionEventTimedAsItsEntry(t *testing.T) {
	ctx := context.Background()
	clock := &tickClock{t: time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)}
	st := storemem.New(nil)
	rt, err := actoviq.New(st, &actoviq.Config{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	noop := tool.Func(tool.Spec{Name: "noop", Effect: tool.SideEffect},
		func(ctx context.Context, in struct{}) (string, error) { return "ok", nil })
	var calls []scripted.ToolCall
	for i := range 3 {
		calls = append(calls, scripted.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "noop", Arguments: json.RawMessage(`{}`)})
	}
	a := &actoviq.AgentSpec{ID: "clock", Model: "scripted-1", Tools: []tool.Tool{noop},
		Provider: scripted.New(scripted.Turn{ToolCalls: calls}, scripted.Turn{Text: "done"})}
	res, err := rt.Run(ctx, a, &actoviq.Input{RunID: "r1", Items: []item.Item{item.UserText("go")}})
	if err != nil || res.Status != actoviq.StatusCompleted {
		t.Fatalf("run: %v %+v", err, res)
	}
	entries, err := st.LedgerList(ctx, &store.LedgerListParams{Tenant: store.DefaultTenant, RunID: "r1"})
	if err != nil || len(entries) != 3 {
		t.Fatalf("ledger: %v, %d entries", err, len(entries))
	}
	evs, err := st.EventList(ctx, &store.EventListParams{Tenant: store.DefaultTenant, RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	timeOf := map[string]time.Time{} // type/call id → event time
	var prepared []time.Time
	for _, ev := range evs {
		var d struct {
			CallID string `json:"call_id"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		timeOf[ev.Type+"/"+d.CallID] = ev.Time
		if ev.Type == actoviq.EvToolPrepared {
			prepared = append(prepared, ev.Time)
		}
	}
	for _, en := range entries {
		if got, want := timeOf[actoviq.EvToolStarted+"/"+en.CallID], store.Time(en.StartedAt); !got.Equal(want) {
			t.Errorf("%s: started event at %v, entry started at %v", en.CallID, got, want)
		}
		if got, want := timeOf[actoviq.EvToolCommitted+"/"+en.CallID], store.Time(en.CommittedAt); !got.Equal(want) {
			t.Errorf("%s: committed event at %v, entry committed at %v", en.CallID, got, want)
		}
		if en.StartedAt.Year() != 2001 || !en.CommittedAt.After(en.StartedAt) {
			t.Errorf("%s: started %v, committed %v: not the runtime's clock", en.CallID, en.StartedAt, en.CommittedAt)
		}
	}
	if len(prepared) != 3 || !prepared[0].Equal(prepared[1]) || !prepared[1].Equal(prepared[2]) || prepared[0].Year() != 2001 {
		t.Errorf("prepared events at %v: want one reading of the runtime's clock", prepared)
	}
}
