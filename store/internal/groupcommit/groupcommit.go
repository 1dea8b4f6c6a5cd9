// Package groupcommit is the leader loop the SQL stores share for group
// commit: writes that arrive while one is in flight queue, and one
// goroutine (the leader) hands them to the store in batches, so that N
// concurrent writers pay about one commit per batch instead of N.
//
// The package knows nothing of databases. A store gives its [Queue] a
// Run function and each write to [Queue.Do]; Run receives a batch (in
// queue order, every write's context still live) and must finish each
// write it is given with [Req.Finish], except those it returns: they go
// back to the front of the queue and run again in a later batch.
//
// The leader keeps leading while writes queue, because handing the lead
// to another goroutine costs a wake-up, and on a loaded machine that gap
// leaves the database idle while writes wait. After MaxExtra batches
// beyond its own write it hands the lead to the oldest queued write, so
// that its caller is not held back by others' writes for long.
//
// MaxLeaders lets several leaders run batches at once (a server that runs
// each batch's statements in one backend: one leader would serialise all
// the server's work of the writes on one CPU, and leave the server's own
// commit grouping nothing to group). A write leads when fewer than
// MaxLeaders lead; otherwise it queues, and the next leader that takes a
// batch takes it. Writes of one batch still run in queue order; writes of
// two concurrent batches run as two concurrent transactions would.
package groupcommit

import (
	"context"
	"sync"
)

// Req is one queued write. Val holds what the store needs to run it and
// whatever it answers besides an error.
type Req[T any] struct {
	Ctx  context.Context
	Val  T
	err  error
	done chan struct{}
	lead chan struct{} // signalled when this write's goroutine is to lead
}

// Finish ends r with err and wakes its caller. It is called once per
// write.
func (r *Req[T]) Finish(err error) {
	r.err = err
	close(r.done)
}

// Queue is a store's commit queue. Set its fields before the first Do.
type Queue[T any] struct {
	// MaxBatch bounds the writes of one batch; MaxExtra bounds the
	// batches a leader runs after its own write.
	MaxBatch, MaxExtra int
	// MaxLeaders bounds the batches running at once; 0 means 1.
	MaxLeaders int
	// Run runs one batch, called by whichever goroutine leads. It
	// finishes every write of batch except those it returns, which run
	// again in a later batch.
	Run func(batch []*Req[T]) (retry []*Req[T])

	mu      sync.Mutex
	queue   []*Req[T]
	leaders int // goroutines leading now
}

// Do queues a write of val and returns when it has finished, with the
// error run finished it with, or ctx's error when ctx ended before the
// write was handed to Run.
func (q *Queue[T]) Do(ctx context.Context, val T) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	req := &Req[T]{Ctx: ctx, Val: val, done: make(chan struct{}), lead: make(chan struct{}, 1)}
	q.mu.Lock()
	q.queue = append(q.queue, req)
	lead := q.leaders < max(q.MaxLeaders, 1)
	if lead {
		q.leaders++
	}
	q.mu.Unlock()
	handed := false
	if !lead {
		select {
		case <-req.done:
			return req.err
		case <-req.lead:
			// Handed the lead: req was taken out of the queue, so no
			// other leader can run it; it goes first in this leader's
			// first batch.
			handed = true
		}
	}
	for {
		q.lead(req, handed)
		// lead returns when req is done, or when another leader took req
		// and the queue was empty: that leader finishes it, or sends it
		// back to the queue (Run's retry), where it may be handed the
		// lead again.
		select {
		case <-req.done:
			return req.err
		case <-req.lead:
			handed = true
		}
	}
}

// Len returns the number of writes waiting for a batch.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}

// lead runs batches until self is done and the queue is empty (or self
// is done and MaxExtra batches ran since), then ends the lead or hands
// it to the oldest queued write. handed says self was handed the lead and
// is not in the queue: it goes first in the first batch. A leader whose
// write another leader took, and that finds the queue empty, ends its
// lead and waits.
func (q *Queue[T]) lead(self *Req[T], handed bool) {
	extra := 0 // batches run after self's
	for {
		q.mu.Lock()
		done := false
		if !handed {
			select {
			case <-self.done:
				done = true
			default:
			}
		}
		if (done && (len(q.queue) == 0 || extra >= q.MaxExtra)) || (!handed && len(q.queue) == 0) {
			if len(q.queue) > 0 {
				// The oldest queued write leads next. It leaves the queue
				// now, so that it is handed the lead once and no other
				// leader runs it meanwhile.
				next := q.queue[0]
				q.queue = append([]*Req[T](nil), q.queue[1:]...)
				next.lead <- struct{}{}
			} else {
				q.leaders--
			}
			q.mu.Unlock()
			return
		}
		if done {
			extra++
		}
		var batch []*Req[T]
		if handed {
			n := min(len(q.queue), max(q.MaxBatch, 1)-1)
			batch = append(make([]*Req[T], 0, n+1), self)
			batch = append(batch, q.queue[:n]...)
			q.queue = append([]*Req[T](nil), q.queue[n:]...)
			handed = false
		} else {
			n := min(len(q.queue), q.MaxBatch)
			batch = q.queue[:n:n]
			q.queue = append([]*Req[T](nil), q.queue[n:]...)
		}
		q.mu.Unlock()
		live := batch[:0:0]
		for _, r := range batch {
			if err := r.Ctx.Err(); err != nil {
				r.Finish(err) // never handed to Run
				continue
			}
			live = append(live, r)
		}
		if len(live) == 0 {
			continue
		}
		if retry := q.Run(live); len(retry) > 0 {
			q.mu.Lock()
			q.queue = append(retry, q.queue...)
			q.mu.Unlock()
		}
	}
}
