// Package journal is the row format of session journals in the SQL
// stores: one row per append, holding the append's items joined by
// U+001E. Valid JSON text never contains that byte (control characters
// are escaped inside strings and are not whitespace), so the items split
// back exactly.
//
// A row also stores a CRC-32C of its text, written when the append's
// items were checked to be JSON. A load verifies the checksum instead of
// parsing every item again (a checksum runs at memory speed, a JSON
// validation at a fraction of it); rows without one (written before
// checksums) have each item validated.
package journal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Sum is the checksum stored with a row's text.
func Sum(row []byte) int64 { return int64(crc32.Checksum(row, castagnoli)) }

// Sep separates the items of one row.
const Sep = '\x1e'

// Join returns the row text of items (valid JSON each).
func Join(items []json.RawMessage) string {
	if len(items) == 1 {
		return string(items[0])
	}
	n := len(items) - 1
	for _, it := range items {
		n += len(it)
	}
	b := make([]byte, 0, n)
	for i, it := range items {
		if i > 0 {
			b = append(b, Sep)
		}
		b = append(b, it...)
	}
	return string(b)
}

// Split returns the n items of a row. With a stored checksum sum, the
// row must match it; without one (nil), each item must be valid JSON. The
// items share the row's bytes.
func Split(row []byte, n int, sum *int64) ([]json.RawMessage, error) {
	if n < 1 {
		return nil, fmt.Errorf("row holds %d items", n)
	}
	if sum != nil && Sum(row) != *sum {
		return nil, fmt.Errorf("row does not match its checksum")
	}
	if k := bytes.Count(row, []byte{Sep}) + 1; k != n {
		return nil, fmt.Errorf("row holds %d items, want %d", k, n)
	}
	out := make([]json.RawMessage, 0, n)
	for range n {
		part := row
		if i := bytes.IndexByte(row, Sep); i >= 0 {
			part, row = row[:i], row[i+1:]
		}
		if sum == nil && !json.Valid(part) {
			return nil, fmt.Errorf("item %d of the row is not valid JSON", len(out)+1)
		}
		out = append(out, json.RawMessage(part))
	}
	return out, nil
}

// SumString is Sum of a row held as a string.
func SumString(row string) int64 { return int64(crc32.Checksum([]byte(row), castagnoli)) }
