package actoviq

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// cpEncoder encodes a drive's checkpoint. The transcript (cp.Items) only
// grows during a drive, so the encoded form of every item is kept and a
// write encodes only the items added since the previous one, instead of
// the whole transcript again on every model turn. The bytes are those of
// json.Marshal(cp) (TestCheckpointEncoder).
type cpEncoder struct {
	items []json.RawMessage // encoded cp.Items[:len(items)]
}

func (c *cpEncoder) encode(cp *checkpoint) ([]byte, error) {
	if cp.Items == nil || len(cp.Items) < len(c.items) {
		// Not the transcript we know (a replaced checkpoint): start over.
		c.items = nil
	}
	if cp.Items == nil {
		return json.Marshal(cp)
	}
	size := 0
	for i := len(c.items); i < len(cp.Items); i++ {
		b, err := json.Marshal(cp.Items[i])
		if err != nil {
			return nil, err
		}
		c.items = append(c.items, b)
	}
	for _, b := range c.items {
		size += len(b) + 1
	}
	shallow := *cp
	shallow.Items = nil
	rest, err := json.Marshal(&shallow)
	if err != nil {
		return nil, err
	}
	// rest starts with {"v":N,"items":null: put the array in its place.
	head := `{"v":` + strconv.Itoa(cp.V) + `,"items":`
	if !bytes.HasPrefix(rest, []byte(head+"null")) {
		return json.Marshal(cp) // the field order changed: no shortcut
	}
	out := make([]byte, 0, len(rest)+size+2)
	out = append(out, head...)
	out = append(out, '[')
	for i, b := range c.items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, b...)
	}
	out = append(out, ']')
	out = append(out, rest[len(head)+len("null"):]...)
	return out, nil
}
