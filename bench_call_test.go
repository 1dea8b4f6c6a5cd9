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
//
// Beside the CPU time per call (cpu-ns/call) it reports, per call and as
// the same difference of the two runs, two counts that explain most of
// how that time moves with the machine: faults/call, the page faults
// (fresh heap pages, most of them for what the memory store keeps: each
// costs about 13-18 µs of kernel CPU on the 2-core VM this project is
// measured on), and switches/call, the context switches (a tool must
// not run on the drive's goroutine, so that a call can return at its
// deadline even if the tool ignores its context; waking another
// goroutine wakes an idle core's thread, which then spins and sleeps
// again: a batch's calls run on one worker goroutine, drive_batch.go,
// one hand-off per batch rather than per call).
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
	var manyU, noneU usage
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		t0, u0 := time.Now(), usageNow()
		run(many, fmt.Sprintf("m%d", i))
		t1, u1 := time.Now(), usageNow()
		run(none, fmt.Sprintf("n%d", i))
		u2 := usageNow()
		manyT, noneT = manyT+t1.Sub(t0), noneT+time.Since(t1)
		manyC, noneC = manyC+u1.cpu-u0.cpu, noneC+u2.cpu-u1.cpu
		manyU, noneU = manyU.add(u1.sub(u0)), noneU.add(u2.sub(u1))
	}
	perCall := func(many, none int64) float64 { return float64(many-none) / float64(b.N) / calls }
	b.ReportMetric(perCall(manyT.Nanoseconds(), noneT.Nanoseconds()), "ns/call")
	b.ReportMetric(perCall(manyC.Nanoseconds(), noneC.Nanoseconds()), "cpu-ns/call")
	b.ReportMetric(perCall(manyU.faults, noneU.faults), "faults/call")
	b.ReportMetric(perCall(manyU.switches, noneU.switches), "switches/call")
}

// usage is what getrusage says of this process: CPU time (user and
// system, all threads), page faults that needed no I/O (a fresh page of
// anonymous memory is one), and context switches (voluntary and not).
type usage struct {
	cpu              time.Duration
	faults, switches int64
}

func usageNow() usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return usage{}
	}
	return usage{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		faults: int64(ru.Minflt), switches: int64(ru.Nvcsw + ru.Nivcsw)}
}

func (u usage) sub(v usage) usage {
	return usage{cpu: u.cpu - v.cpu, faults: u.faults - v.faults, switches: u.switches - v.switches}
}

func (u usage) add(v usage) usage {
	return usage{cpu: u.cpu + v.cpu, faults: u.faults + v.faults, switches: u.switches + v.switches}
}
