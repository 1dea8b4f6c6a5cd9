package transport

import (
	"bytes"
	"io"
	"strconv"
	"time"
)

// SSEEvent is one Server-Sent Event.
type SSEEvent struct {
	// Type is the last "event:" field of the event; empty when there was
	// none (the SSE spec calls that type "message").
	Type string
	// Data is the "data:" fields joined with "\n", exactly as sent after
	// the one optional space following the colon. Trailing spaces are kept;
	// encoding/json ignores them, so JSON payloads padded with spaces
	// decode fine, but compare sentinels such as "[DONE]" after
	// bytes.TrimSpace. Data is newly allocated for every event and belongs
	// to the caller.
	Data []byte
	// ID is the last event ID: the most recent "id:" field seen on the
	// stream so far, per the SSE spec.
	ID string
	// Retry is the reconnection time of a "retry:" field in this event,
	// zero when absent. The transport itself never reconnects.
	Retry time.Duration
}

// SSEDecoder reads Server-Sent Events from an io.Reader. It accepts LF, CRLF
// and CR line endings, ignores comment lines (starting with ':') and
// unknown fields, and bounds memory: a line, or the data of one event,
// longer than its limit fails with *EventTooLargeError.
//
// Unlike the SSE spec, an event still pending at a clean end of input (no
// final blank line) is dispatched rather than dropped: a server that
// closes the stream normally has finished its last event. An SSEDecoder is not
// safe for concurrent use.
type SSEDecoder struct {
	r     io.Reader
	limit int
	buf   []byte // read buffer; buf[start:end] is unread
	start int
	end   int
	rerr  error  // error from r, reported once buf is drained
	line  []byte // a line that spans reads
	crlf  bool   // the previous line ended in CR: skip a leading LF
	err   error  // sticky error from Next

	typ     []byte
	data    []byte
	hasData bool
	retry   time.Duration
	lastID  string
	lastTyp string // reused when the next type is the same, to save an allocation
	started bool   // the first line has been read (BOM check done)
}

const readChunk = 32 << 10

// NewSSEDecoder returns a Decoder reading r. limit bounds a line and the data
// of one event; limit <= 0 means DefaultMaxEventSize (64 MiB).
func NewSSEDecoder(r io.Reader, limit int) *SSEDecoder {
	if limit <= 0 {
		limit = DefaultMaxEventSize
	}
	return &SSEDecoder{r: r, limit: limit, buf: make([]byte, readChunk)}
}

// Next returns the next event. It returns io.EOF after the last event of a
// clean end of input, the reader's error if it failed (a pending event is
// then dropped), or *EventTooLargeError. Errors are sticky.
func (d *SSEDecoder) Next() (SSEEvent, error) {
	if d.err != nil {
		return SSEEvent{}, d.err
	}
	for {
		line, err := d.readLine()
		if err == nil && !d.started {
			d.started = true
			line = bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF")) // spec: ignore a leading BOM
		}
		if err != nil {
			if err == io.EOF && d.hasData {
				return d.dispatch(), nil
			}
			d.err = err
			return SSEEvent{}, err
		}
		if len(line) == 0 {
			if d.hasData {
				return d.dispatch(), nil
			}
			d.typ, d.retry = d.typ[:0], 0 // spec: an event without data is dropped
			continue
		}
		if err := d.field(line); err != nil {
			d.err = err
			return SSEEvent{}, err
		}
	}
}

func (d *SSEDecoder) field(line []byte) error {
	if line[0] == ':' {
		return nil
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) { // no allocation: the compiler special-cases this
	case "data":
		if d.hasData {
			if len(d.data)+1+len(value) > d.limit {
				return &EventTooLargeError{Limit: d.limit}
			}
			d.data = append(d.data, '\n')
		}
		d.data = append(d.data, value...)
		d.hasData = true
	case "event":
		d.typ = append(d.typ[:0], value...)
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			if string(value) != d.lastID {
				d.lastID = string(value)
			}
		}
	case "retry":
		if ms, err := strconv.ParseUint(string(value), 10, 63); err == nil && onlyDigits(value) {
			d.retry = time.Duration(min(ms, uint64(1<<63-1)/uint64(time.Millisecond))) * time.Millisecond
		}
	}
	return nil
}

func onlyDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

func (d *SSEDecoder) dispatch() SSEEvent {
	ev := SSEEvent{Data: bytes.Clone(d.data), ID: d.lastID, Retry: d.retry}
	if ev.Data == nil {
		ev.Data = []byte{}
	}
	if len(d.typ) > 0 {
		if string(d.typ) != d.lastTyp {
			d.lastTyp = string(d.typ)
		}
		ev.Type = d.lastTyp
	}
	d.typ, d.retry, d.hasData = d.typ[:0], 0, false
	if cap(d.data) > readChunk {
		d.data = nil // do not pin one huge event's memory
	} else {
		d.data = d.data[:0]
	}
	return ev
}

// readLine returns the next line without its terminator. The slice is
// valid until the next call. At the end of input it returns a final
// unterminated line, if any, and then the reader's error.
func (d *SSEDecoder) readLine() ([]byte, error) {
	d.line = d.line[:0]
	if cap(d.line) > readChunk {
		d.line = nil
	}
	for {
		if d.start == d.end {
			if d.rerr != nil {
				if len(d.line) > 0 {
					return d.line, nil
				}
				return nil, d.rerr
			}
			d.fill()
			continue
		}
		if d.crlf {
			d.crlf = false
			if d.buf[d.start] == '\n' {
				d.start++
				continue
			}
		}
		chunk := d.buf[d.start:d.end]
		i := indexEOL(chunk)
		if i < 0 {
			if len(d.line)+len(chunk) > d.limit {
				return nil, &EventTooLargeError{Limit: d.limit}
			}
			d.line = append(d.line, chunk...)
			d.start = d.end
			continue
		}
		d.crlf = chunk[i] == '\r'
		d.start += i + 1
		if len(d.line)+i > d.limit {
			return nil, &EventTooLargeError{Limit: d.limit}
		}
		if len(d.line) == 0 {
			return chunk[:i], nil
		}
		d.line = append(d.line, chunk[:i]...)
		return d.line, nil
	}
}

// fill reads once into the buffer.
func (d *SSEDecoder) fill() {
	d.start, d.end = 0, 0
	for tries := 0; tries < 100; tries++ {
		n, err := d.r.Read(d.buf)
		if n < 0 || n > len(d.buf) {
			d.rerr = io.ErrNoProgress
			return
		}
		d.end = n
		if err != nil {
			d.rerr = err
			return
		}
		if n > 0 {
			return
		}
	}
	d.rerr = io.ErrNoProgress
}

// indexEOL returns the index of the first CR or LF in b, or -1.
func indexEOL(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		i = len(b)
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	if i == len(b) {
		return -1
	}
	return i
}
