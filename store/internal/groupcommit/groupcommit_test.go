package groupcommit

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// TestEveryWriteGetsItsOwnAnswer runs many concurrent writes through a
// queue whose Run answers each write with its own error, sends every
// third write back once, and checks that each caller got its own answer,
// each write ran exactly as often as asked, and batches held more than
// one write (the writes did share batches).
func TestEveryWriteGetsItsOwnAnswer(t *testing.T) {
	type w struct {
		n    int
		runs int
	}
	var (
		mu      sync.Mutex
		batches []int
		running bool
	)
	q := &Queue[*w]{MaxBatch: 4, MaxExtra: 1}
	release := make(chan struct{})
	held := make(chan int, 1) // the size of the first batch, sent while Run holds it
	first := true
	q.Run = func(batch []*Req[*w]) (retry []*Req[*w]) {
		mu.Lock()
		if running {
			mu.Unlock()
			t.Error("two batches ran at once")
			return nil
		}
		running = true
		batches = append(batches, len(batch))
		hold := first
		first = false
		mu.Unlock()
		if hold {
			held <- len(batch)
			<-release // let the others queue behind the first batch
		}
		for _, r := range batch {
			r.Val.runs++
			if r.Val.n%3 == 0 && r.Val.runs == 1 {
				retry = append(retry, r)
				continue
			}
			if r.Val.n%2 == 0 {
				r.Finish(fmt.Errorf("write %d", r.Val.n))
			} else {
				r.Finish(nil)
			}
		}
		mu.Lock()
		running = false
		mu.Unlock()
		return retry
	}
	const n = 40
	ws := make([]*w, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	started := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		ws[0] = &w{n: 0}
		close(started)
		errs[0] = q.Do(context.Background(), ws[0])
	}()
	<-started
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws[i] = &w{n: i}
			errs[i] = q.Do(context.Background(), ws[i])
		}()
	}
	// Wait until every other write has queued behind the first batch,
	// then let it end.
	k := <-held
	for q.Len() < n-k {
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	for i, x := range ws {
		want := 1
		if i%3 == 0 {
			want = 2
		}
		if x.runs != want {
			t.Errorf("write %d ran %d times, want %d", i, x.runs, want)
		}
		if i%2 == 0 {
			if errs[i] == nil || errs[i].Error() != fmt.Sprintf("write %d", i) {
				t.Errorf("write %d answered %v", i, errs[i])
			}
		} else if errs[i] != nil {
			t.Errorf("write %d answered %v", i, errs[i])
		}
	}
	shared := false
	for _, b := range batches {
		if b > 4 {
			t.Errorf("a batch held %d writes, more than MaxBatch", b)
		}
		if b > 1 {
			shared = true
		}
	}
	if !shared {
		t.Errorf("no batch held more than one write: %v", batches)
	}
	if q.Len() != 0 {
		t.Errorf("%d writes left in the queue", q.Len())
	}
}

// TestEndedContextNeverRuns checks that a write whose context ended while
// it waited is answered with the context's error and never reaches Run,
// and that Do refuses an ended context at once.
func TestEndedContextNeverRuns(t *testing.T) {
	ran := map[string]bool{}
	release := make(chan struct{})
	inRun := make(chan struct{})
	q := &Queue[string]{MaxBatch: 8, MaxExtra: 8}
	q.Run = func(batch []*Req[string]) []*Req[string] {
		for _, r := range batch {
			ran[r.Val] = true
			if r.Val == "first" {
				close(inRun)
				<-release
			}
			r.Finish(nil)
		}
		return nil
	}
	done := make(chan error, 2)
	go func() { done <- q.Do(context.Background(), "first") }()
	<-inRun
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- q.Do(ctx, "cancelled") }()
	for q.Len() < 1 {
		runtime.Gosched()
	}
	cancel()
	close(release)
	for range 2 {
		<-done
	}
	if ran["cancelled"] {
		t.Error("a write whose context ended before its batch ran")
	}
	if !ran["first"] {
		t.Error("the first write never ran")
	}
	if err := q.Do(ctx, "late"); !errors.Is(err, context.Canceled) {
		t.Errorf("Do on an ended context = %v, want context.Canceled", err)
	}
	if ran["late"] {
		t.Error("a write with an ended context ran")
	}
}

// TestSeveralLeaders checks MaxLeaders: three writes that arrive one
// after another while the batches before them are still running each
// lead a batch of their own at once (three batches run together), never
// more than MaxLeaders batches run together, and every write of many
// concurrent ones (some sent back once) runs as often as asked and gets
// its own answer.
func TestSeveralLeaders(t *testing.T) {
	const leaders = 3
	type w struct {
		n    int
		runs int
	}
	var (
		mu      sync.Mutex
		running int
		most    int
	)
	entered := make(chan struct{}, 100)
	release := make(chan struct{})
	q := &Queue[*w]{MaxBatch: 4, MaxExtra: 2, MaxLeaders: leaders}
	q.Run = func(batch []*Req[*w]) (retry []*Req[*w]) {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		entered <- struct{}{}
		<-release
		for _, r := range batch {
			mu.Lock()
			r.Val.runs++
			again := r.Val.n%5 == 0 && r.Val.runs == 1
			mu.Unlock()
			if again {
				retry = append(retry, r)
				continue
			}
			r.Finish(fmt.Errorf("write %d", r.Val.n))
		}
		mu.Lock()
		running--
		mu.Unlock()
		return retry
	}
	const n = 60
	ws := make([]*w, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	do := func(i int) {
		wg.Add(1)
		ws[i] = &w{n: i}
		go func() {
			defer wg.Done()
			errs[i] = q.Do(context.Background(), ws[i])
		}()
	}
	// Three writes, each sent once the batches before it are in Run.
	for i := range leaders {
		do(i)
		<-entered
	}
	mu.Lock()
	if running != leaders {
		t.Errorf("%d batches running at once, want %d", running, leaders)
	}
	mu.Unlock()
	for i := leaders; i < n; i++ {
		do(i)
	}
	for q.Len() < n-leaders {
		runtime.Gosched()
	}
	close(release)
	go func() {
		for range entered {
		}
	}()
	wg.Wait()
	close(entered)
	if most > leaders {
		t.Errorf("%d batches ran at once, more than MaxLeaders %d", most, leaders)
	}
	for i, x := range ws {
		want := 1
		if i%5 == 0 {
			want = 2
		}
		if x.runs != want {
			t.Errorf("write %d ran %d times, want %d", i, x.runs, want)
		}
		if errs[i] == nil || errs[i].Error() != fmt.Sprintf("write %d", i) {
			t.Errorf("write %d answered %v", i, errs[i])
		}
	}
	if q.Len() != 0 {
		t.Errorf("%d writes left in the queue", q.Len())
	}
	q.mu.Lock()
	if q.leaders != 0 {
		t.Errorf("%d leaders left after every write ended", q.leaders)
	}
	q.mu.Unlock()
}
