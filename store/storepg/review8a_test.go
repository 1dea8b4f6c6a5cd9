package storepg_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storemem"
	"github.com/actoviq/actoviq-go/store/storepg"
)

// review8a: Open turns JIT off (8c31468) and parallel query off unless
// the URL sets them. A URL may set them through libpq's options
// parameter ("-c jit=on"), which PostgreSQL applies before the startup
// packet's own settings: Open's jit=off then overrides the URL's choice.
func TestReview8aURLOptionsKeepTheirSettings(t *testing.T) {
	schema := newSchema(t)
	url := testURL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	show := func(url, name string) string {
		t.Helper()
		s, err := storepg.Open(ctx, url, &storepg.Config{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var v string
		if err := s.Pool().QueryRow(ctx, `SHOW `+name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := show(url+sep+"jit=on", "jit"); v != "on" {
		t.Errorf("jit = %s with the URL's jit=on", v)
	}
	if v := show(url+sep+"options=-c%20jit%3Don", "jit"); v != "on" {
		t.Errorf("jit = %s with the URL's options=-c jit=on", v)
	}
	if v := show(url+sep+"options=-c%20max_parallel_workers_per_gather%3D3", "max_parallel_workers_per_gather"); v != "3" {
		t.Errorf("max_parallel_workers_per_gather = %s with the URL's options=-c max_parallel_workers_per_gather=3", v)
	}
	if v := show(url+sep+"options=-c%20jit_above_cost%3D10", "jit"); v != "off" {
		t.Errorf("jit = %s with the URL's options setting jit_above_cost only, want Open's off", v)
	}
	t.Setenv("PGOPTIONS", "--jit=on")
	if v := show(url, "jit"); v != "on" {
		t.Errorf("jit = %s with PGOPTIONS=--jit=on", v)
	}
}

// review8a: a paged list (Order RunsWaitingLongest) of the runs of two
// unfinished statuses, one of them interrupted, whose claim is live
// (56d21bc, 6f1021d: the interrupted half from claims_interrupted) gives
// each run once, as the memory store does.
func TestReview8aInterruptedLiveWaitingPages(t *testing.T) {
	schema := newSchema(t)
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); now = now.Add(time.Second); return now }
	pg := openStore(t, schema, clock)
	mem := storemem.New(&storemem.Config{Clock: clock})
	// Created in an order that differs from the update order: created
	// a..t, then updated in reverse (each run written once more).
	const n = 20
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("r%02d", i)
		st := store.RunInterrupted
		if i%3 == 0 {
			st = store.RunQueued
		}
		for _, s := range []store.Store{pg, mem} {
			mustCreateRun(t, s, "t", ids[i], st)
		}
	}
	for i := n - 1; i >= 0; i-- {
		for _, s := range []store.Store{pg, mem} {
			r, err := s.RunGet(ctx, &store.RunGetParams{Tenant: "t", ID: ids[i]})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: ids[i],
				Run: &store.RunUpdate{ExpectedRevision: r.Revision, Status: r.Status, Checkpoint: r.Checkpoint}}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "t", Key: store.RunClaimKey(ids[i]), Holder: "h:1", TTL: time.Hour}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, order := range []store.RunOrder{store.RunsNewest, store.RunsWaitingLongest} {
		for _, limit := range []int{2, 3, 7} {
			page := func(s store.Store) []string {
				var got []string
				var after *store.RunCursor
				for range 2 * n {
					runs, err := s.RunList(ctx, &store.RunListParams{Tenant: "t", Statuses: []store.RunStatus{store.RunQueued, store.RunInterrupted},
						Claim: store.ClaimFilter{State: store.ClaimLive}, Order: order, After: after, Limit: limit})
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range runs {
						got = append(got, r.ID)
					}
					if len(runs) < limit {
						break
					}
					after = store.CursorOf(runs[len(runs)-1], order)
				}
				return got
			}
			want, got := page(mem), page(pg)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("order %v, pages of %d: PostgreSQL listed %v, memory %v", order, limit, got, want)
			}
		}
	}
}

// review8a: the idle count (8c31468: the released claims live at now read
// only when the latest release expires after now) agrees with the list of
// idle runs, for a time before the releases (released claims still live
// then), between them, and after every expiry, with claims released at
// different times and held claims live and expired.
func TestReview8aIdleCountAgreesWithList(t *testing.T) {
	schema := newSchema(t)
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(d) }
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	set := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
	s := openStore(t, schema, clock)
	sts := []store.RunStatus{store.RunInterrupted, store.RunRunning, store.RunQueued}
	for i := range 24 {
		set(at(time.Duration(i) * time.Minute))
		id := fmt.Sprintf("r%02d", i)
		mustCreateRun(t, s, "t", id, sts[i%3])
		switch i % 4 {
		case 0: // no claim
		case 1, 2: // claimed, released at minute 30+i
			c, err := s.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "t", Key: store.RunClaimKey(id), Holder: "h:" + id, TTL: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			set(at(time.Duration(30+i) * time.Minute))
			if err := s.ClaimRelease(ctx, &store.ClaimReleaseParams{Tenant: "t", Fence: store.Fence{Key: c.Key, Holder: c.Holder, Epoch: c.Epoch}}); err != nil {
				t.Fatal(err)
			}
		case 3: // held, for 10 or 100 minutes
			ttl := 10 * time.Minute
			if i%8 == 7 {
				ttl = 100 * time.Minute
			}
			if _, err := s.ClaimAcquire(ctx, &store.ClaimAcquireParams{Tenant: "t", Key: store.RunClaimKey(id), Holder: "h:" + id, TTL: ttl}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, m := range []int{0, 5, 25, 31, 40, 45, 55, 60, 80, 200} {
		when := at(time.Duration(m) * time.Minute)
		counts, err := s.RunCount(ctx, &store.RunCountParams{Tenant: "t", Statuses: sts, Claim: store.ClaimFilter{State: store.ClaimIdle}, Now: when})
		if err != nil {
			t.Fatal(err)
		}
		got := map[store.RunStatus]int64{}
		for _, c := range counts {
			got[c.Status] += c.N
		}
		for _, st := range sts {
			runs, err := s.RunList(ctx, &store.RunListParams{Tenant: "t", Status: st, Claim: store.ClaimFilter{State: store.ClaimIdle}, Now: when})
			if err != nil {
				t.Fatal(err)
			}
			if got[st] != int64(len(runs)) {
				t.Errorf("minute %d, %s: idle count %d, idle list %d", m, st, got[st], len(runs))
			}
		}
	}
}
