package storesqlite_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

// TestReview10aWriterChild is a writer process of
// TestReview10aProcessesShareTheFile: it makes hot writes (1 to 20
// ledger transitions with their events, each at the revision it last
// read) from a few goroutines and prints each stored record.
func TestReview10aWriterChild(t *testing.T) {
	path := os.Getenv("REVIEW10A_WRITER_PATH")
	if path == "" {
		t.Skip("the writer child process only")
	}
	seed, _ := strconv.ParseInt(os.Getenv("REVIEW10A_WRITER_SEED"), 10, 64)
	s, err := storesqlite.Open(path, &storesqlite.Config{BusyTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed*10 + int64(g)))
			for range 40 {
				run := fmt.Sprint("r", rng.Intn(2))
				n := 1 + rng.Intn(20)
				if rng.Intn(2) == 0 {
					n = 1 + rng.Intn(2)
				}
				first := rng.Intn(30 - n + 1)
				p := &store.RunWriteParams{Tenant: "t", RunID: run}
				for c := first; c < first+n; c++ {
					call := fmt.Sprint("c", c)
					var rev int64
					e, err := s.LedgerGet(context.Background(), &store.LedgerGetParams{Tenant: "t", RunID: run, CallID: call})
					switch {
					case err == nil:
						rev = e.Revision
					case errors.Is(err, store.ErrNotFound):
					default:
						t.Error(err)
						return
					}
					p.Ledger = append(p.Ledger, store.LedgerWrite{ExpectedRevision: rev, Event: &store.EventRecord{Type: "ledger", ID: fmt.Sprint(seed, "-", g)},
						Entry: &store.LedgerEntry{Tenant: "t", RunID: run, CallID: call, Tool: "x", State: store.LedgerStarted, Holder: fmt.Sprint(seed)}})
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(50+rng.Intn(3000))*time.Millisecond)
				res, err := s.RunWrite(ctx, p)
				cancel()
				mu.Lock()
				switch {
				case err == nil:
					for i, e := range res.Ledger {
						fmt.Fprintf(out, "OK %s %s %d %d %d\n", run, e.CallID, e.Revision, res.Events[i].Seq, e.CreatedAt.UnixMicro())
					}
				case errors.Is(err, store.ErrConflict):
					fmt.Fprintln(out, "CONFLICT")
				case errors.Is(err, store.ErrBusy), errors.Is(err, context.DeadlineExceeded):
					// Nothing stored (a deadline ends only the wait for the lock).
					fmt.Fprintln(out, "GAVEUP", err)
				default:
					fmt.Fprintln(out, "ERR", err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	out.Flush()
}

// TestReview10aProcessesShareTheFile (review10a): three processes make
// hot writes (records checked with one SELECT, stored with one INSERT
// ... VALUES) to the same calls of the same runs of one file, each at
// the revision it read, with deadlines from 50 ms to 3 s, each waiting
// for the others' write lock in writer.begin. Every record a process was
// told was stored is stored as told (its revision, seq and creation
// time), no two writes got the same revision of a call or the same seq
// of a run, each call's revisions and each run's events are gapless, and
// a write that gave up (deadline, busy) or conflicted stored nothing
// (every stored record was answered OK to someone).
func TestReview10aProcessesShareTheFile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	path := filepath.Join(t.TempDir(), "x.db")
	s := open(t, path, nil)
	bg := context.Background()
	for r := range 2 {
		if _, err := s.RunCreate(bg, &store.RunCreateParams{Run: &store.Run{Tenant: "t", ID: fmt.Sprint("r", r), Status: store.RunRunning}}); err != nil {
			t.Fatal(err)
		}
	}
	type rec struct {
		run, call string
		rev, seq  int64
		created   int64
	}
	var (
		mu      sync.Mutex
		oks     []rec
		counts  = map[string]int{}
		wg      sync.WaitGroup
		failure []string
	)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestReview10aWriterChild$")
			cmd.Env = append(os.Environ(), "REVIEW10A_WRITER_PATH="+path, "REVIEW10A_WRITER_SEED="+strconv.Itoa(i+1))
			b, err := cmd.CombinedOutput()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failure = append(failure, fmt.Sprintf("child %d: %v\n%s", i, err, b))
			}
			for _, line := range strings.Split(string(b), "\n") {
				f := strings.Fields(line)
				if len(f) == 0 {
					continue
				}
				counts[f[0]]++
				switch f[0] {
				case "OK":
					var r rec
					r.run, r.call = f[1], f[2]
					r.rev, _ = strconv.ParseInt(f[3], 10, 64)
					r.seq, _ = strconv.ParseInt(f[4], 10, 64)
					r.created, _ = strconv.ParseInt(f[5], 10, 64)
					oks = append(oks, r)
				case "ERR":
					failure = append(failure, line)
				}
			}
		}()
	}
	wg.Wait()
	for _, f := range failure {
		t.Error(f)
	}
	t.Logf("answers: %v", counts)
	byRev := map[string]rec{}
	bySeq := map[string]rec{}
	for _, r := range oks {
		k := r.run + "/" + r.call + "/" + strconv.FormatInt(r.rev, 10)
		if o, dup := byRev[k]; dup {
			t.Errorf("revision written twice: %+v and %+v", o, r)
		}
		byRev[k] = r
		k = r.run + "/" + strconv.FormatInt(r.seq, 10)
		if o, dup := bySeq[k]; dup {
			t.Errorf("seq written twice: %+v and %+v", o, r)
		}
		bySeq[k] = r
	}
	for run := range 2 {
		id := fmt.Sprint("r", run)
		evs, err := s.EventList(bg, &store.EventListParams{Tenant: "t", RunID: id})
		if err != nil {
			t.Fatal(err)
		}
		for i, ev := range evs {
			if ev.Seq != int64(i+1) {
				t.Fatalf("%s: event %d has seq %d", id, i, ev.Seq)
			}
			if _, ok := bySeq[id+"/"+strconv.FormatInt(ev.Seq, 10)]; !ok {
				t.Errorf("%s: seq %d stored but answered to nobody", id, ev.Seq)
			}
		}
		answered := 0
		for _, r := range oks {
			if r.run == id {
				answered++
			}
		}
		if len(evs) != answered {
			t.Errorf("%s: %d events stored, %d answered", id, len(evs), answered)
		}
		for c := range 30 {
			call := fmt.Sprint("c", c)
			e, err := s.LedgerGet(bg, &store.LedgerGetParams{Tenant: "t", RunID: id, CallID: call})
			if errors.Is(err, store.ErrNotFound) {
				if _, ok := byRev[id+"/"+call+"/1"]; ok {
					t.Errorf("%s %s: answered stored, not found", id, call)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			var created int64
			for rev := int64(1); rev <= e.Revision; rev++ {
				r, ok := byRev[id+"/"+call+"/"+strconv.FormatInt(rev, 10)]
				if !ok {
					t.Errorf("%s %s: revision %d of %d answered to nobody", id, call, rev, e.Revision)
					continue
				}
				if rev == 1 {
					created = r.created
				} else if r.created != created {
					t.Errorf("%s %s rev %d: created %d, first %d", id, call, rev, r.created, created)
				}
			}
			if _, ok := byRev[id+"/"+call+"/"+strconv.FormatInt(e.Revision+1, 10)]; ok {
				t.Errorf("%s %s: revision %d answered, %d stored", id, call, e.Revision+1, e.Revision)
			}
		}
	}
}
