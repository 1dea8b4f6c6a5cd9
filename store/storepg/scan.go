package storepg

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// Rows are scanned into nullable destinations and checked here, so that a
// damaged row (invalid JSON, an unknown status, a NULL where none belongs)
// becomes a *store.DataError naming the record instead of a driver error
// or a panic.

// decoder collects the first problem found while decoding one row.
type decoder struct {
	kind, id string
	err      error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

// result returns the *store.DataError for the row, or nil.
func (d *decoder) result() error {
	if d.err == nil {
		return nil
	}
	return &store.DataError{Kind: d.kind, ID: d.id, Err: d.err}
}

func (d *decoder) str(col string, v *string) string {
	if v == nil {
		d.fail("column %s: unexpected NULL", col)
		return ""
	}
	return *v
}

func (d *decoder) i64(col string, v *int64) int64 {
	if v == nil {
		d.fail("column %s: unexpected NULL", col)
		return 0
	}
	return *v
}

func (d *decoder) int(col string, v *int64) int {
	n := d.i64(col, v)
	if int64(int(n)) != n {
		d.fail("column %s: %d overflows int", col, n)
	}
	return int(n)
}

// tm is a required timestamp.
func (d *decoder) tm(col string, v *time.Time) time.Time {
	if v == nil {
		d.fail("column %s: unexpected NULL", col)
		return time.Time{}
	}
	return store.Time(*v)
}

// optTime is a nullable timestamp: NULL is the zero time.
func optTime(v *time.Time) time.Time {
	if v == nil {
		return time.Time{}
	}
	return store.Time(*v)
}

// json is a required JSON column.
func (d *decoder) json(col string, v *string) json.RawMessage {
	if v == nil {
		d.fail("column %s: unexpected NULL", col)
		return nil
	}
	return d.optJSON(col, v)
}

// optJSON is a nullable JSON column: NULL is a nil RawMessage.
func (d *decoder) optJSON(col string, v *string) json.RawMessage {
	if v == nil {
		return nil
	}
	if !json.Valid([]byte(*v)) {
		d.fail("column %s: invalid JSON", col)
		return nil
	}
	return json.RawMessage(*v)
}

// decision decodes a nullable JSON column holding a *store.DecisionRecord.
func (d *decoder) decision(col string, v *string) *store.DecisionRecord {
	if v == nil {
		return nil
	}
	var dec store.DecisionRecord
	if err := json.Unmarshal([]byte(*v), &dec); err != nil {
		d.fail("column %s: %w", col, err)
		return nil
	}
	return &dec
}
