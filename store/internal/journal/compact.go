package journal

import (
	"fmt"
	"sync"
)

// Compaction. Every every-th log row of a run (every is
// killpoint.CompactEvery in the stores) triggers, after its write
// returned, a merge of the rows in (seq-span, seq], where span is the
// largest every·2^k dividing seq: a binary counter, so that each item is
// rewritten O(log n) times over a run of n rows and a read meets
// O(log n) rows. The store makes a merge one transaction (read the rows,
// check their checksums, delete them, write the merged row), so a crash
// at any point leaves either the old rows or the merged one.

// Span returns the rows a write of log row seq merges; 0 for none.
func Span(seq, every int64) int64 {
	if every <= 0 || seq <= 0 || seq%every != 0 {
		return 0
	}
	span := every
	for seq%(span*2) == 0 {
		span *= 2
	}
	return span
}

// Compactor runs a store's merges on goroutines of their own, off the
// write path: at most two at once, the others wait their turn. Its zero
// value is ready; Close stops it.
type Compactor struct {
	wg     sync.WaitGroup
	mu     sync.Mutex
	sem    chan struct{} // at most two merges at once
	closed bool
}

// Later runs merge(seq-span, seq) on a goroutine when a write of log row
// seq closes a span (see [Span]); nothing when it does not or when c is
// closed. A failed merge changes nothing, so merge reports nothing.
func (c *Compactor) Later(seq, every int64, merge func(lo, hi int64)) {
	span := Span(seq, every)
	if span == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if c.sem == nil {
		c.sem = make(chan struct{}, 2)
	}
	sem := c.sem
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		sem <- struct{}{} // at most two merges at once; the others wait their turn
		defer func() { <-sem }()
		merge(seq-span, seq)
	}()
}

// Close starts no merge after it and waits for those running.
func (c *Compactor) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.wg.Wait()
}

// Merge gathers the log rows of one span, in seq order, into one row.
type Merge struct {
	parts    [][]byte
	first, n int64
	gap      bool
}

// Add adds the row seq, which holds n items from item first, with its
// stored checksum. A row that does not match its checksum is an error:
// the merge must not go on.
func (m *Merge) Add(seq, first, n, crc int64, text []byte) error {
	if Sum(text) != crc {
		return fmt.Errorf("log row %d does not match its checksum", seq)
	}
	if len(m.parts) == 0 {
		m.first = first
	} else if first != m.first+m.n {
		m.gap = true
	}
	m.n += n
	m.parts = append(m.parts, text)
	return nil
}

// Row returns the merged row: its first item, item count and text. ok
// is false when there is nothing to merge (fewer than two rows, or rows
// that do not follow each other).
func (m *Merge) Row() (first, n int64, text []byte, ok bool) {
	if len(m.parts) < 2 || m.gap {
		return 0, 0, nil, false
	}
	size := len(m.parts) - 1
	for _, p := range m.parts {
		size += len(p)
	}
	merged := make([]byte, 0, size)
	for i, p := range m.parts {
		if i > 0 {
			merged = append(merged, Sep)
		}
		merged = append(merged, p...)
	}
	return m.first, m.n, merged, true
}
