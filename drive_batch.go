package actoviq

import (
	"context"
	"errors"
	"sync"

	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/tool"
)

// runBatch runs the prepared calls of the pending turn in the model's
// order (docs/design.md#the-ledger). A run of consecutive read calls runs in parallel, at
// most Limits.ReadParallelism at once; any other call runs alone, after
// every call before it has settled. The walk stops at the first call that
// is not settled (awaiting approval, interrupted, or left prepared by a
// cancellation): every later call stays prepared and runs after the
// decision, so nothing overtakes a call the model asked for first.
// blocked holds the calls the recovery rules already interrupted.
func (d *drive) runBatch(ctx context.Context, blocked map[string]bool) (interrupts []Interruption, err error) {
	defer func() {
		// A committed write still held goes now, before anything waits
		// (drive_carry.go).
		if ferr := d.flushCarried(ctx); ferr != nil && err == nil {
			err = ferr
		}
	}()
	pending := d.cp.Pending
	for i := 0; i < len(pending); {
		en := d.entry(pending[i])
		if en.State == store.LedgerCommitted {
			i++
			continue
		}
		if blocked[en.CallID] || en.State != store.LedgerPrepared {
			return interrupts, nil
		}
		group := []*store.LedgerEntry{en}
		if en.Effect == tool.Read.String() {
			for j := i + 1; j < len(pending); j++ {
				next := d.entry(pending[j])
				if blocked[next.CallID] || next.State != store.LedgerPrepared || next.Effect != tool.Read.String() {
					break
				}
				group = append(group, next)
			}
		}
		// A lone call with a call after it: its committed write goes with
		// that call's first write (drive_carry.go).
		d.holdCommit = len(group) == 1 && i+1 < len(pending)
		in, err := d.runGroup(ctx, group)
		d.holdCommit = false
		interrupts = append(interrupts, in...)
		if err != nil || len(in) > 0 {
			return interrupts, err
		}
		for _, g := range group {
			if d.carriedState(g.CallID) != store.LedgerCommitted {
				// Not started (cancellation, the run's deadline): what
				// comes after it waits too.
				return interrupts, nil
			}
		}
		i += len(group)
	}
	return interrupts, nil
}

// runGroup runs one call, or a run of consecutive reads in parallel.
func (d *drive) runGroup(ctx context.Context, group []*store.LedgerEntry) ([]Interruption, error) {
	if len(group) == 1 {
		in, err := d.runCall(ctx, group[0])
		if in != nil {
			return []Interruption{*in}, err
		}
		return nil, err
	}
	sem := make(chan struct{}, d.limits.ReadParallelism)
	var wg sync.WaitGroup
	ins := make([]*Interruption, len(group))
	errs := make([]error, len(group))
	for i, en := range group {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ins[i], errs[i] = d.runCall(ctx, en)
		}()
	}
	wg.Wait()
	var out []Interruption
	for _, in := range ins {
		if in != nil {
			out = append(out, *in)
		}
	}
	return out, errors.Join(errs...)
}
