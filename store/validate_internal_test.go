package store

import (
	"errors"
	"fmt"
	"testing"
)

// A call id twice in one write is refused, whether the write has a few
// records (compared pairwise) or many (through a map).
func TestRunWriteParamsCallIDTwice(t *testing.T) {
	for _, n := range []int{2, 3, 8, 9, 20} {
		for dup := 1; dup < n; dup += max(1, n/4) {
			p := &RunWriteParams{Tenant: "t", RunID: "r"}
			for i := range n {
				id := fmt.Sprintf("c%d", i)
				if i == dup {
					id = fmt.Sprintf("c%d", dup-1) // the record just before's
					if dup > 1 {
						id = "c0"
					}
				}
				p.Ledger = append(p.Ledger, LedgerWrite{Entry: &LedgerEntry{Tenant: "t", RunID: "r", CallID: id, Tool: "x", State: LedgerPrepared}})
			}
			err := p.Validate()
			var ie *InvalidError
			if !errors.As(err, &ie) || ie.Field != fmt.Sprintf("Ledger[%d]", dup) || ie.Reason != "call id written twice in one write" {
				t.Errorf("%d records, record %d repeats an id: %v", n, dup, err)
			}
			p.Ledger[dup].Entry.CallID = "other"
			if err := p.Validate(); err != nil {
				t.Errorf("%d distinct records: %v", n, err)
			}
		}
	}
}
