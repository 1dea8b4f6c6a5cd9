package journal

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

func TestSpan(t *testing.T) {
	for seq, want := range map[int64]int64{0: 0, 1: 0, 15: 0, 16: 16, 32: 32, 48: 16, 64: 64, 96: 32, 100: 0, 128: 128} {
		if got := Span(seq, 16); got != want {
			t.Errorf("Span(%d, 16) = %d, want %d", seq, got, want)
		}
	}
}

func TestMerge(t *testing.T) {
	rows := [][]json.RawMessage{{json.RawMessage(`1`), json.RawMessage(`2`)}, {json.RawMessage(`"a"`)}, {json.RawMessage(`{}`)}}
	var m Merge
	first := int64(5)
	var all []json.RawMessage
	for i, items := range rows {
		text := []byte(Join(items))
		if err := m.Add(int64(i+1), first, int64(len(items)), Sum(text), text); err != nil {
			t.Fatal(err)
		}
		first += int64(len(items))
		all = append(all, items...)
	}
	f, n, text, ok := m.Row()
	if !ok || f != 5 || n != 4 {
		t.Fatalf("Row = %d, %d, %q, %v; want 5, 4, the rows joined, true", f, n, text, ok)
	}
	sum := Sum(text)
	got, err := Split(text, int(n), &sum)
	if err != nil || fmt.Sprintf("%s", got) != fmt.Sprintf("%s", all) {
		t.Errorf("the merged row splits into %s (%v), want %s", got, err, all)
	}

	var one Merge
	_ = one.Add(1, 0, 1, Sum([]byte(`1`)), []byte(`1`))
	if _, _, _, ok := one.Row(); ok {
		t.Error("a single row merged")
	}
	var gap Merge
	_ = gap.Add(1, 0, 1, Sum([]byte(`1`)), []byte(`1`))
	_ = gap.Add(2, 2, 1, Sum([]byte(`2`)), []byte(`2`))
	if _, _, _, ok := gap.Row(); ok {
		t.Error("rows with a gap between them merged")
	}
	var bad Merge
	if err := bad.Add(1, 0, 1, Sum([]byte(`1`))+1, []byte(`1`)); err == nil {
		t.Error("a row that does not match its checksum was added")
	}
}

// TestCompactorRunsAtMostTwo starts merges for several spans, holds them,
// and checks that no more than two run at once, that each span runs once
// with its bounds, that Close waits for them, and that nothing starts
// after Close.
func TestCompactorRunsAtMostTwo(t *testing.T) {
	var (
		c       Compactor
		running atomic.Int32
		most    atomic.Int32
		mu      sync.Mutex
		spans   = map[[2]int64]int{}
		entered = make(chan struct{}, 8)
		release = make(chan struct{})
	)
	merge := func(lo, hi int64) {
		n := running.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		mu.Lock()
		spans[[2]int64{lo, hi}]++
		mu.Unlock()
		entered <- struct{}{}
		<-release
		running.Add(-1)
	}
	for _, seq := range []int64{15, 16, 32, 48, 64, 65} {
		c.Later(seq, 16, merge)
	}
	<-entered
	<-entered
	close(release)
	c.Close()
	if most.Load() > 2 {
		t.Errorf("%d merges ran at once, want at most 2", most.Load())
	}
	want := map[[2]int64]int{{0, 16}: 1, {0, 32}: 1, {32, 48}: 1, {0, 64}: 1}
	if fmt.Sprint(spans) != fmt.Sprint(want) {
		t.Errorf("merged spans %v, want %v", spans, want)
	}
	c.Later(80, 16, func(lo, hi int64) { t.Errorf("a merge (%d, %d] started after Close", lo, hi) })
}
