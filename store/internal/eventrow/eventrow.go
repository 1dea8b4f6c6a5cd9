// Package eventrow is the format of an events row of the SQL stores that
// holds several records of one write (issue 22: rows written per call).
//
// A run write's event records (its plain events, then the event of each
// ledger write, numbered in that order) are one events row when the write
// has two or more and every ledger record in it is a new entry (expected
// revision 0) in a state other than started and unknown: the response
// write with its prepared calls, a run's last write. The row's columns
// hold the first record as a one-record row does (its event, and its
// entry when it is a ledger record); first_seq is that record's number and
// seq the last record's, so numbering by max(seq) and paging by seq > n
// work as before. The other records are the row's more column: a JSON
// array of them (see [Encode]), covered by a CRC-32C (more_crc), with the
// call ids of its ledger records in more_calls. Every entry in a row is
// at revision 1, created and updated at the row's entry_updated time:
// that is what a writer's revision check reads for a call it finds in
// more_calls, without decoding the row.
//
// A write that does not qualify keeps one row per record, as before.
//
// One write qualifies but for its last records: the model's response
// written with its first call's started record (the engine's
// drive_fold.go), the call's entry new and directly in state started,
// its record numbered last. Its records before the started one (the
// response's events, the other calls' prepared records) are one row as
// above ([Tail], [FoldableBefore]), and each started record keeps a
// one-record row after it, numbered after the row's last record: the
// rows of the two writes it replaces. Its state stays in the columns.
package eventrow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/actoviq/actoviq-go/internal/jsonenc"
	"github.com/actoviq/actoviq-go/store"
)

// Record is one record of a row: an event and, for a ledger transition,
// the entry as written.
type Record struct {
	Event *store.EventRecord
	Entry *store.LedgerEntry // nil for a plain event
	// Approval and Resolution are the entry's decisions as the store
	// encodes them in its columns, for Encode (nil: none). Decode leaves
	// them nil and gives the decoded decisions in Entry.
	Approval, Resolution []byte
}

// Foldable reports whether the records of p go in one row: two or more,
// and every ledger record a new entry in a state other than started and
// unknown (so that the rules reading the state columns, such as a prune's
// "a call started and never committed", never need the more column).
func Foldable(p *store.RunWriteParams) bool {
	return FoldableBefore(p, 0)
}

// Tail returns how many of p's last ledger writes are new entries in
// state started with an event of their own (numbered last of the
// write's records): the records that keep a row each after the one
// row of the others when [FoldableBefore](p, Tail(p)).
func Tail(p *store.RunWriteParams) int {
	n := 0
	for i := len(p.Ledger) - 1; i >= 0; i-- {
		w := p.Ledger[i]
		if w.Event == nil || w.ExpectedRevision != 0 || w.Entry.State != store.LedgerStarted {
			break
		}
		n++
	}
	return n
}

// FoldableBefore reports whether the records of p but its last tail
// ledger writes go in one row: Foldable's rule over them.
func FoldableBefore(p *store.RunWriteParams, tail int) bool {
	n := len(p.Events)
	for _, w := range p.Ledger[:len(p.Ledger)-tail] {
		if w.Event == nil {
			continue
		}
		if w.ExpectedRevision != 0 || w.Entry.State == store.LedgerStarted || w.Entry.State == store.LedgerUnknown {
			return false
		}
		n++
	}
	return n >= 2
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Sum is the checksum stored with a row's more text.
func Sum(text []byte) int64 { return int64(crc32.Checksum(text, castagnoli)) }

// Encode returns the more text of recs (the records after a row's first),
// its checksum and the call ids of its ledger records, in order. Each
// event's Time must be set. ok is false when a record cannot be kept
// byte for byte in this form (a string that is not UTF-8, a JSON value
// with space around it): the write then keeps one row per record.
func Encode(recs []Record) (text string, crc int64, calls []string, ok bool) {
	b := make([]byte, 0, 256*len(recs))
	b = append(b, '[')
	for i, r := range recs {
		if i > 0 {
			b = append(b, ',')
		}
		ev := r.Event
		var good bool
		b, good = appendRecord(b, ev, r.Entry, r.Approval, r.Resolution)
		if !good {
			return "", 0, nil, false
		}
		if r.Entry != nil {
			calls = append(calls, r.Entry.CallID)
		}
	}
	b = append(b, ']')
	return string(b), Sum(b), calls, true
}

func appendRecord(b []byte, ev *store.EventRecord, e *store.LedgerEntry, approval, resolution []byte) ([]byte, bool) {
	ok := true
	str := func(key, v string) {
		if !utf8.ValidString(v) {
			ok = false
		}
		b = append(b, ',', '"')
		b = append(b, key...)
		b = append(b, '"', ':')
		b = jsonenc.AppendString(b, v)
	}
	num := func(key string, v int64) {
		b = append(b, ',', '"')
		b = append(b, key...)
		b = append(b, '"', ':')
		b = strconv.AppendInt(b, v, 10)
	}
	raw := func(key string, v []byte) {
		if v == nil {
			return
		}
		if len(v) == 0 || isSpace(v[0]) || isSpace(v[len(v)-1]) {
			ok = false
			return
		}
		b = append(b, ',', '"')
		b = append(b, key...)
		b = append(b, '"', ':')
		b = append(b, v...)
	}
	b = append(b, `{"id":`...)
	if !utf8.ValidString(ev.ID) {
		ok = false
	}
	b = jsonenc.AppendString(b, ev.ID)
	str("parent", ev.ParentRunID)
	str("trace", ev.TraceID)
	str("span", ev.SpanID)
	str("type", ev.Type)
	num("time", ev.Time.UnixMicro())
	raw("data", ev.Data)
	if e != nil {
		b = append(b, `,"entry":{"call":`...)
		if !utf8.ValidString(e.CallID) {
			ok = false
		}
		b = jsonenc.AppendString(b, e.CallID)
		num("turn", int64(e.Turn))
		num("idx", int64(e.Index))
		str("tool", e.Tool)
		str("effect", e.Effect)
		str("state", string(e.State))
		str("key", e.IdempotencyKey)
		num("attempt", int64(e.Attempt))
		str("digest", e.ArgsDigest)
		raw("args", e.Args)
		raw("result", e.Result)
		raw("error", e.Error)
		raw("approval", approval)
		raw("resolution", resolution)
		str("holder", e.Holder)
		num("epoch", e.Epoch)
		if !e.StartedAt.IsZero() {
			num("started", e.StartedAt.UnixMicro())
		}
		if !e.CommittedAt.IsZero() {
			num("committed", e.CommittedAt.UnixMicro())
		}
		b = append(b, '}')
	}
	b = append(b, '}')
	return b, ok
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// wire is a record of the more text as it is decoded.
type wire struct {
	ID     *string         `json:"id"`
	Parent string          `json:"parent"`
	Trace  string          `json:"trace"`
	Span   string          `json:"span"`
	Type   *string         `json:"type"`
	Time   *int64          `json:"time"`
	Data   json.RawMessage `json:"data"`
	Entry  *struct {
		Call       *string               `json:"call"`
		Turn       int                   `json:"turn"`
		Index      int                   `json:"idx"`
		Tool       string                `json:"tool"`
		Effect     string                `json:"effect"`
		State      string                `json:"state"`
		Key        string                `json:"key"`
		Attempt    int                   `json:"attempt"`
		Digest     string                `json:"digest"`
		Args       json.RawMessage       `json:"args"`
		Result     json.RawMessage       `json:"result"`
		Error      json.RawMessage       `json:"error"`
		Approval   *store.DecisionRecord `json:"approval"`
		Resolution *store.DecisionRecord `json:"resolution"`
		Holder     string                `json:"holder"`
		Epoch      int64                 `json:"epoch"`
		Started    int64                 `json:"started"`
		Committed  int64                 `json:"committed"`
	} `json:"entry"`
}

// Row is what a reader scanned of an events row that holds several
// records.
type Row struct {
	Tenant, RunID string
	// FirstSeq and Seq number the row's first and last records.
	FirstSeq, Seq int64
	// More, MoreCRC and MoreCalls are the row's more columns.
	More      []byte
	MoreCRC   int64
	MoreCalls []string
	// Written is the row's entry_updated time: when its entries were
	// created.
	Written time.Time
}

// Decode returns the records of r's more column, numbered FirstSeq+1 to
// Seq. The text must match its checksum, hold Seq-FirstSeq records, and
// name in more_calls exactly the calls of its ledger records; a row that
// does not is a [*store.DataError] naming it.
func Decode(r *Row) ([]Record, error) {
	recs, err := decode(r)
	if err != nil {
		return nil, &store.DataError{Kind: "event", ID: r.RunID + "#" + strconv.FormatInt(r.Seq, 10), Err: err}
	}
	return recs, nil
}

func decode(r *Row) ([]Record, error) {
	n := r.Seq - r.FirstSeq
	if n < 1 || n > 1<<20 {
		return nil, fmt.Errorf("row numbers records %d to %d", r.FirstSeq, r.Seq)
	}
	if Sum(r.More) != r.MoreCRC {
		return nil, errors.New("more does not match its checksum")
	}
	if r.Written.IsZero() {
		return nil, errors.New("row holding several records has no entry_updated time")
	}
	var ws []wire
	dec := json.NewDecoder(bytes.NewReader(r.More))
	if err := dec.Decode(&ws); err != nil {
		return nil, fmt.Errorf("more: %w", err)
	}
	if dec.More() {
		return nil, errors.New("more: text after the records")
	}
	if int64(len(ws)) != n {
		return nil, fmt.Errorf("more holds %d records, the row numbers %d", len(ws), n)
	}
	out := make([]Record, len(ws))
	calls := 0
	for i, w := range ws {
		if w.ID == nil || w.Type == nil || w.Time == nil {
			return nil, fmt.Errorf("record %d of more lacks its id, type or time", i+1)
		}
		ev := &store.EventRecord{Tenant: r.Tenant, RunID: r.RunID, Seq: r.FirstSeq + 1 + int64(i), ID: *w.ID,
			ParentRunID: w.Parent, TraceID: w.Trace, SpanID: w.Span, Type: *w.Type,
			Time: time.UnixMicro(*w.Time).UTC(), Data: w.Data}
		out[i].Event = ev
		e := w.Entry
		if e == nil {
			continue
		}
		if e.Call == nil || *e.Call == "" {
			return nil, fmt.Errorf("record %d of more has an entry without a call id", i+1)
		}
		st := store.LedgerState(e.State)
		if !st.Valid() {
			return nil, fmt.Errorf("record %d of more: unknown state %q", i+1, e.State)
		}
		if calls >= len(r.MoreCalls) || r.MoreCalls[calls] != *e.Call {
			return nil, fmt.Errorf("record %d of more is call %q, more_calls does not name it there", i+1, *e.Call)
		}
		calls++
		en := &store.LedgerEntry{Tenant: r.Tenant, RunID: r.RunID, CallID: *e.Call, Turn: e.Turn, Index: e.Index,
			Tool: e.Tool, Effect: e.Effect, State: st, IdempotencyKey: e.Key, Attempt: e.Attempt, ArgsDigest: e.Digest,
			Args: e.Args, Result: e.Result, Error: e.Error, Approval: e.Approval, Resolution: e.Resolution,
			Holder: e.Holder, Epoch: e.Epoch, Revision: 1, CreatedAt: r.Written, UpdatedAt: r.Written}
		if e.Started != 0 {
			en.StartedAt = time.UnixMicro(e.Started).UTC()
		}
		if e.Committed != 0 {
			en.CommittedAt = time.UnixMicro(e.Committed).UTC()
		}
		out[i].Entry = en
	}
	if calls != len(r.MoreCalls) {
		return nil, fmt.Errorf("more_calls names %d calls, more holds %d", len(r.MoreCalls), calls)
	}
	return out, nil
}

// Find returns the entry of call in r's records, or nil.
func Find(recs []Record, call string) *store.LedgerEntry {
	for _, rec := range recs {
		if rec.Entry != nil && rec.Entry.CallID == call {
			return rec.Entry
		}
	}
	return nil
}
