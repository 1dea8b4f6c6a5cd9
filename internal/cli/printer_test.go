package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
)

func event(t *testing.T, typ string, data any) actoviq.Event {
	t.Helper()
	b, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	return actoviq.Event{Schema: actoviq.EventSchema, Type: typ, RunID: "r1", Time: time.Now(), Data: b}
}

// On a terminal a long wait shows a spinner with the elapsed time on
// stderr, erased before the next output; without one, no spinner (only a
// line after seconds of silence), and stdout is the same either way.
func TestPrinterSpinner(t *testing.T) {
	for _, tty := range []bool{true, false} {
		var out, errw bytes.Buffer
		p := &printer{out: &out, errw: &errw, tty: tty, started: map[string]time.Time{}, done: make(chan struct{}), lastSeen: time.Now()}
		p.Emit(t.Context(), event(t, actoviq.EvModelRequest, actoviq.ModelRequestData{Turn: 1, Model: "m"}))
		start := p.since
		p.tick(start.Add(500 * time.Millisecond)) // too soon
		if errw.Len() != 0 {
			t.Fatalf("tty=%v: progress after half a second: %q", tty, errw.String())
		}
		p.tick(start.Add(2300 * time.Millisecond))
		if tty {
			if got := errw.String(); !strings.HasPrefix(got, "\r\033[K") || !strings.Contains(got, "waiting for the model (turn 1) 2.3s") {
				t.Fatalf("spinner = %q", got)
			}
		} else if errw.Len() != 0 {
			t.Fatalf("no terminal: a spinner was drawn: %q", errw.String())
		}
		errw.Reset()
		p.Emit(t.Context(), event(t, actoviq.EvTextDelta, actoviq.TextDeltaData{Delta: "Hello"}))
		if tty && errw.String() != "\r\033[K" {
			t.Errorf("the spinner was not erased before the text: %q", errw.String())
		}
		if !tty && errw.Len() != 0 {
			t.Errorf("no terminal: stderr got %q", errw.String())
		}
		p.tick(start.Add(5 * time.Second)) // text is flowing: no spinner mid-line
		if tty && strings.Count(errw.String(), "waiting") != 0 {
			t.Errorf("spinner drawn while text streams: %q", errw.String())
		}
		if out.String() != "Hello" {
			t.Errorf("tty=%v: stdout = %q", tty, out.String())
		}
	}
}

// A retry backoff is a wait like any other.
func TestPrinterSpinsDuringBackoff(t *testing.T) {
	var out, errw bytes.Buffer
	p := &printer{out: &out, errw: &errw, tty: true, started: map[string]time.Time{}, done: make(chan struct{}), lastSeen: time.Now()}
	p.Emit(t.Context(), event(t, actoviq.EvModelAttempt, actoviq.ModelAttemptData{Number: 1, Status: 503, Wait: 4 * time.Second}))
	p.tick(p.since.Add(1500 * time.Millisecond))
	if !strings.Contains(errw.String(), "waiting for the retry of the model call (attempt 2, backoff 4s) 1.5s") {
		t.Errorf("stderr = %q", errw.String())
	}
	if !strings.Contains(out.String(), "attempt 1 failed (status 503); retrying in 4s") {
		t.Errorf("stdout = %q", out.String())
	}
}
