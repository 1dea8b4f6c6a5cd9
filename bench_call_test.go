//go:build unix

package actoviq_test

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/tool"
)

// BenchmarkCallCPU measures the engine's own cost of a durable
// side-effect call on the memory store: a run whose model asks for 10
// calls of a no-op side-effect tool in one turn, less a run that asks for
// none, per call (ns/call). Profile it with
//
//	go test -run X -bench CallCPU -cpuprofile cpu.out
func BenchmarkCallCPU(b *testing.B) {
	const calls = 10
	ctx := context.Background()
	noop := tool.Func(tool.Spec{Name: "noop", Effect: tool.SideEffect},
		func(ctx context.Context, in struct{}) (string, error) { return "ok", nil })
	agent := func(n int) *actoviq.AgentSpec {
		var tc []scripted.ToolCall
		for i := range n {
			tc = append(tc, scripted.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "noop", Arguments: json.RawMessage(`{}`)})
		}
		turns := []scripted.Turn{{ToolCalls: tc}, {Text: "done"}}
		if n == 0 {
			turns = turns[1:]
		}
		return &actoviq.AgentSpec{ID: "bench", Model: "scripted-1", Tools: []tool.Tool{noop}, Provider: scripted.New(turns...)}
	}
	many, none := agent(calls), agent(0)
	rt, err := actoviq.New(storemem.New(nil), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	in := []item.Item{item.UserText("go")}
	run := func(a *actoviq.AgentSpec, id string) {
		res, err := rt.Run(ctx, a, &actoviq.Input{RunID: id, Items: in})
		if err != nil || res.Status != actoviq.StatusCompleted {
			b.Fatalf("run %s: %v %+v", id, err, res)
		}
	}
	// Both runs in each iteration, each timed on its own, so that drift
	// hits them alike.
	// CPU time (the process's, all threads: the engine, the store, the
	// garbage collector) says more than wall time on a loaded machine.
	var manyT, noneT, manyC, noneC time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		t0, c0 := time.Now(), cpuTime()
		run(many, fmt.Sprintf("m%d", i))
		t1, c1 := time.Now(), cpuTime()
		run(none, fmt.Sprintf("n%d", i))
		manyT, noneT = manyT+t1.Sub(t0), noneT+time.Since(t1)
		manyC, noneC = manyC+c1-c0, noneC+cpuTime()-c1
	}
	b.ReportMetric(float64((manyT-noneT).Nanoseconds())/float64(b.N)/calls, "ns/call")
	b.ReportMetric(float64((manyC-noneC).Nanoseconds())/float64(b.N)/calls, "cpu-ns/call")
}

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
