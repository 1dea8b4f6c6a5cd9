package storesqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// queued waits until n writes wait in the commit queue.
func queued(s *Store, n int) {
	for {
		if s.commits.Len() >= n {
			return
		}
		runtime.Gosched()
	}
}

// TestGroupCommit holds one write open, queues more behind it and checks
// that they share one commit: a failing write is rolled back alone, a
// write whose context ended before its batch never runs, a write that
// loses the shared transaction makes the others run again, and every
// other write is durable (it is there after reopening the file).
func TestGroupCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gc.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.db.Exec(`CREATE TABLE gc (n INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	insert := func(tx querier, n int) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO gc (n) VALUES (?)`, n)
		return err
	}
	entered, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- s.write(ctx, func(tx querier) error {
			if err := insert(tx, 0); err != nil {
				return err
			}
			close(entered)
			<-release
			return nil
		})
	}()
	<-entered
	before := s.Stats()

	errBoom := errors.New("boom")
	const k = 8
	errs := make([]error, k+1)
	var wg sync.WaitGroup
	cctx, cancel := context.WithCancel(ctx)
	for i := 1; i <= k; i++ {
		wctx := ctx
		if i == 5 {
			wctx = cctx
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.write(wctx, func(tx querier) error {
				if err := insert(tx, i); err != nil {
					return err
				}
				if i == 3 {
					return errBoom // rolled back to its savepoint
				}
				return nil
			})
		}()
		queued(s, i) // keep the queue in order
	}
	cancel() // write 5 ends before its batch starts
	close(release)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= k; i++ {
		switch {
		case i == 3 && !errors.Is(errs[i], errBoom):
			t.Errorf("write 3: %v, want boom", errs[i])
		case i == 5 && !errors.Is(errs[i], context.Canceled):
			t.Errorf("write 5: %v, want context.Canceled", errs[i])
		case i != 3 && i != 5 && errs[i] != nil:
			t.Errorf("write %d: %v", i, errs[i])
		}
	}
	after := s.Stats()
	if c, b := after.Commits-before.Commits, after.Batched-before.Batched; c != 2 || b != k-1 {
		t.Errorf("the held write and the %d queued ones took %d commits holding %d writes, want 2 holding %d", k, c, b, k-1)
	}

	// A write that ends the shared transaction itself: it fails, the
	// writes batched with it run again and commit.
	entered, release = make(chan struct{}), make(chan struct{})
	go func() {
		first <- s.write(ctx, func(tx querier) error {
			close(entered)
			<-release
			return nil
		})
	}()
	<-entered
	var lostErr error
	errs2 := make([]error, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.write(ctx, func(tx querier) error {
				if err := insert(tx, 100+i); err != nil {
					return err
				}
				if i == 1 {
					if _, err := tx.ExecContext(ctx, `ROLLBACK`); err != nil {
						return err
					}
					return errBoom
				}
				return nil
			})
			if i == 1 {
				lostErr = err
			} else {
				errs2[i] = err
			}
		}()
		queued(s, i+1)
	}
	close(release)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if !errors.Is(lostErr, errBoom) {
		t.Errorf("the write that lost the transaction: %v, want boom", lostErr)
	}
	for _, i := range []int{0, 2} {
		if errs2[i] != nil {
			t.Errorf("write %d batched with a lost transaction: %v", 100+i, errs2[i])
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.db.Query(`SELECT n FROM gc ORDER BY n`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []int
	for rows.Next() {
		var n int
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	want := []int{0, 1, 2, 4, 6, 7, 8, 100, 102}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rows after reopening: %v, want %v", got, want)
	}
}
