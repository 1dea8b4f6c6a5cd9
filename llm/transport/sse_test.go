package transport_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/actoviq/actoviq-go/llm/transport"
)

// decodeAll reads every event; err is the final non-EOF error, if any.
func decodeAll(r io.Reader, limit int) ([]transport.SSEEvent, error) {
	d := transport.NewSSEDecoder(r, limit)
	var evs []transport.SSEEvent
	for {
		ev, err := d.Next()
		if err == io.EOF {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func ev(typ, data, id string) transport.SSEEvent {
	return transport.SSEEvent{Type: typ, Data: []byte(data), ID: id}
}

func TestDecoder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   string
		want []transport.SSEEvent
	}{
		{"lf", "data: a\n\ndata: b\n\n", []transport.SSEEvent{ev("", "a", ""), ev("", "b", "")}},
		{"crlf", "event: x\r\ndata: a\r\n\r\ndata: b\r\n\r\n", []transport.SSEEvent{ev("x", "a", ""), ev("", "b", "")}},
		{"cr", "event: x\rdata: a\r\rdata: b\r\r", []transport.SSEEvent{ev("x", "a", ""), ev("", "b", "")}},
		{"mixed endings", "data: a\r\ndata: b\rdata: c\n\r\n", []transport.SSEEvent{ev("", "a\nb\nc", "")}},
		{"comments", ": ping\n:\ndata: a\n: mid\n\n", []transport.SSEEvent{ev("", "a", "")}},
		{"event names", "event: message_start\ndata: {}\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\n",
			[]transport.SSEEvent{ev("message_start", "{}", ""), ev("ping", `{"type": "ping"}`, "")}},
		{"multi-line data", "data: line1\ndata:line2\ndata:  two spaces\ndata\n\n",
			[]transport.SSEEvent{ev("", "line1\nline2\n two spaces\n", "")}},
		{"trailing spaces kept", "data: {\"a\":1}   \n\n", []transport.SSEEvent{ev("", "{\"a\":1}   ", "")}},
		{"no final blank line", "data: a\n\ndata: b", []transport.SSEEvent{ev("", "a", ""), ev("", "b", "")}},
		{"no final blank line after LF", "data: a\n", []transport.SSEEvent{ev("", "a", "")}},
		{"id persists", "id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\n",
			[]transport.SSEEvent{ev("", "a", "1"), ev("", "b", "1"), ev("", "c", "")}},
		{"id with NUL ignored", "id: 7\ndata: a\n\nid: x\x00y\ndata: b\n\n", []transport.SSEEvent{ev("", "a", "7"), ev("", "b", "7")}},
		{"event without data dropped", "event: x\n\ndata: a\n\n", []transport.SSEEvent{ev("", "a", "")}},
		{"empty data dispatched", "data\n\ndata:\n\n", []transport.SSEEvent{ev("", "", ""), ev("", "", "")}},
		{"unknown field and colonless line", "foo: bar\nbaz\ndata: a\n\n", []transport.SSEEvent{ev("", "a", "")}},
		{"bom", "\xEF\xBB\xBFdata: a\n\n", []transport.SSEEvent{ev("", "a", "")}},
		{"value keeps colons", "data: a: b\n\n", []transport.SSEEvent{ev("", "a: b", "")}},
		{"blank lines only", "\n\n\r\n", nil},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in)),
				iotest.DataErrReader(strings.NewReader(tc.in))} {
				got, err := decodeAll(r, 0)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("got  %q\nwant %q", got, tc.want)
				}
			}
		})
	}
}

func TestDecoderRetryField(t *testing.T) {
	t.Parallel()
	got, err := decodeAll(strings.NewReader("retry: 1500\ndata: a\n\nretry: x1\ndata: b\n\n"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Retry != 1500*time.Millisecond || got[1].Retry != 0 {
		t.Fatalf("%+v", got)
	}
}

func TestDecoderTrailingSpacesJSON(t *testing.T) {
	t.Parallel()
	got, _ := decodeAll(strings.NewReader("data: {\"a\":1}   \t\n\n"), 0)
	var v struct{ A int }
	if err := json.Unmarshal(got[0].Data, &v); err != nil || v.A != 1 {
		t.Fatalf("%v %+v", err, v)
	}
}

func TestDecoderLongLine(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("x"), 20<<20)
	in := io.MultiReader(strings.NewReader("event: big\ndata: "), bytes.NewReader(big), strings.NewReader("\n\ndata: after\n\n"))
	got, err := decodeAll(in, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !bytes.Equal(got[0].Data, big) || got[0].Type != "big" || string(got[1].Data) != "after" {
		t.Fatalf("got %d events", len(got))
	}
}

func TestDecoderOverLimit(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{
		"one line":        "data: ok\n\ndata: " + strings.Repeat("y", 200) + "\n\n",
		"unterminated":    "data: ok\n\ndata: " + strings.Repeat("y", 200),
		"many data lines": "data: ok\n\n" + strings.Repeat("data: "+strings.Repeat("z", 30)+"\n", 10) + "\n",
		"comment line":    "data: ok\n\n:" + strings.Repeat("c", 200) + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := decodeAll(strings.NewReader(in), 100)
			var tl *transport.EventTooLargeError
			if !errors.As(err, &tl) || tl.Limit != 100 || !errors.Is(err, transport.ErrEventTooLarge) {
				t.Fatalf("err = %v", err)
			}
			if len(got) != 1 || string(got[0].Data) != "ok" {
				t.Fatalf("events before the error: %q", got)
			}
		})
	}
}

func TestDecoderReaderError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	in := io.MultiReader(strings.NewReader("data: a\n\ndata: partial"), iotest.ErrReader(boom))
	got, err := decodeAll(in, 0)
	if !errors.Is(err, boom) || len(got) != 1 {
		t.Fatalf("got %q err %v", got, err)
	}
}

// chunkReader returns the input in reads of the given sizes, cycling.
type chunkReader struct {
	b     []byte
	sizes []byte
	i     int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(r.sizes) > 0 {
		n = int(r.sizes[r.i%len(r.sizes)])%7 + 1
		r.i++
	}
	n = min(n, len(p), len(r.b))
	copy(p, r.b[:n])
	r.b = r.b[n:]
	return n, nil
}

func FuzzDecoder(f *testing.F) {
	for _, s := range []string{
		"data: a\n\n", "event: x\r\ndata: {\"a\":1}   \r\n\r\n", "data: a\rdata: b\r\r", ": c\nid: 1\nretry: 10\ndata\n",
		"data: " + strings.Repeat("q", 80) + "\n\n", "\xEF\xBB\xBFdata: x", "\r\n\r", "data:\r", "data: a\n\ndata: b",
	} {
		f.Add([]byte(s), []byte{3, 1, 4})
	}
	f.Fuzz(func(t *testing.T, in, sizes []byte) {
		const limit = 64
		whole, werr := decodeAll(bytes.NewReader(in), limit)
		one, oerr := decodeAll(iotest.OneByteReader(bytes.NewReader(in)), limit)
		odd, cerr := decodeAll(&chunkReader{b: in, sizes: sizes}, limit)
		if !reflect.DeepEqual(whole, one) || !reflect.DeepEqual(whole, odd) {
			t.Fatalf("split changes events:\nwhole %q\none   %q\nodd   %q", whole, one, odd)
		}
		if (werr == nil) != (oerr == nil) || (werr == nil) != (cerr == nil) {
			t.Fatalf("split changes error: %v / %v / %v", werr, oerr, cerr)
		}
		if werr != nil && !errors.Is(werr, transport.ErrEventTooLarge) {
			t.Fatalf("unexpected error %v", werr)
		}
		for _, e := range whole {
			if len(e.Data) > limit {
				t.Fatalf("event data %d bytes over limit", len(e.Data))
			}
		}
	})
}
