package storesqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// Times are stored as INTEGER unix microseconds (UTC), the precision of
// [store.Time]. A zero time is stored as NULL where the field is optional.

func micros(t time.Time) int64 { return store.Time(t).UnixMicro() }

func optMicros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return micros(t)
}

func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

func fromOptMicros(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return fromMicros(v.Int64)
}

// optJSON stores nil JSON as NULL.
func optJSON(b json.RawMessage) any {
	if b == nil {
		return nil
	}
	return string(b)
}

func cloneJSON(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return append(json.RawMessage(nil), b...)
}

// decoder collects the first decoding failure of one record, so that a
// scanner can read every column and report one [*store.DataError] naming
// the record.
type decoder struct {
	kind, id string
	err      error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

// json returns a nullable JSON column; text that is not JSON fails.
func (d *decoder) json(col string, v sql.NullString) json.RawMessage {
	if !v.Valid {
		return nil
	}
	if !json.Valid([]byte(v.String)) {
		d.fail("column %s: not valid JSON", col)
		return nil
	}
	return json.RawMessage(v.String)
}

// reqJSON returns a JSON column that must not be NULL.
func (d *decoder) reqJSON(col string, v sql.NullString) json.RawMessage {
	if !v.Valid {
		d.fail("column %s: NULL", col)
		return nil
	}
	return d.json(col, v)
}

func (d *decoder) decision(col string, v sql.NullString) *store.DecisionRecord {
	b := d.json(col, v)
	if b == nil {
		return nil
	}
	var dec store.DecisionRecord
	if err := json.Unmarshal(b, &dec); err != nil {
		d.fail("column %s: %v", col, err)
		return nil
	}
	normDecision(&dec)
	return &dec
}

// scanErr wraps a failed row conversion (a NULL or a value of the wrong
// type where the schema says otherwise) as a DataError.
func (d *decoder) scanErr(err error) error {
	return &store.DataError{Kind: d.kind, ID: d.id, Err: err}
}

func (d *decoder) result() error {
	if d.err == nil {
		return nil
	}
	return &store.DataError{Kind: d.kind, ID: d.id, Err: d.err}
}

// normDecision gives a decision the form it has after a round trip through
// the database, so that what a write returns equals what a read returns.
func normDecision(d *store.DecisionRecord) {
	d.At = store.Time(d.At)
}

func encodeDecision(d *store.DecisionRecord) (any, *store.DecisionRecord, error) {
	if d == nil {
		return nil, nil, nil
	}
	c := *d
	normDecision(&c)
	b, err := json.Marshal(&c)
	if err != nil {
		return nil, nil, err
	}
	var back store.DecisionRecord
	if err := json.Unmarshal(b, &back); err != nil {
		return nil, nil, err
	}
	normDecision(&back)
	return string(b), &back, nil
}

// scanner is a *sql.Rows or *sql.Row.
type scanner interface{ Scan(dest ...any) error }

// queryOne runs a query that returns at most one row and scans it with fn.
// It returns found=false when there is no row. Unlike sql.Row it keeps
// driver errors (returned as they are) apart from decoding errors (fn's).
func queryOne(r rowsResult, fn func(scanner) error) (found bool, _ error) {
	rows, err := r.rows, r.err
	if err != nil {
		return false, err
	}
	defer rows.Close()
	if !rows.Next() {
		return false, rows.Err()
	}
	if err := fn(rows); err != nil {
		return true, err
	}
	return true, rows.Close()
}

type rowsResult struct {
	rows *sql.Rows
	err  error
}

// one adapts the two results of QueryContext to queryOne's argument.
func one(rows *sql.Rows, err error) rowsResult { return rowsResult{rows, err} }
