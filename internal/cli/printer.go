package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
)

// printer is the event sink of run and resume. For a person it streams the
// model's text, one line per tool state change with its duration, retries
// with their wait, and progress while a model call, a tool or a retry
// backoff takes long: on a terminal a spinner with the elapsed time on
// stderr, redrawn in place and erased before anything else is printed;
// otherwise a line on stderr every few seconds of silence. With --json it
// writes each event envelope as one line and nothing else.
type printer struct {
	out, errw io.Writer
	json      bool
	// tty: stderr is a terminal, so progress is a spinner redrawn in place.
	tty bool

	mu       sync.Mutex
	midLine  bool
	deltas   bool                 // text deltas arrived since the last model request
	started  map[string]time.Time // call id → started
	waiting  string               // what we wait for
	since    time.Time            // when the wait began
	lastSeen time.Time
	spun     bool // a spinner frame is on the screen
	frame    int
	done     chan struct{}
	once     sync.Once
}

func newPrinter(out, errw io.Writer, jsonOut bool) *printer {
	p := &printer{out: out, errw: errw, json: jsonOut, tty: isTerminal(errw), started: map[string]time.Time{},
		done: make(chan struct{}), lastSeen: time.Now()}
	if !jsonOut {
		go p.progress()
	}
	return p
}

// isTerminal reports whether w is a character device (a terminal) and
// TERM does not say it cannot redraw a line.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// stop ends the progress reporter and erases its spinner.
func (p *printer) stop() {
	p.once.Do(func() {
		close(p.done)
		p.mu.Lock()
		p.unspin()
		p.mu.Unlock()
	})
}

// progress drives tick: ten times a second on a terminal, else once a
// second.
func (p *printer) progress() {
	every := time.Second
	if p.tty {
		every = 100 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case now := <-t.C:
			p.tick(now)
		}
	}
}

var spinFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// tick shows progress for the current wait, if it has lasted: a spinner
// frame after a second on a terminal, a line every three seconds of
// silence otherwise.
func (p *printer) tick(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waiting == "" {
		return
	}
	if p.tty {
		if p.midLine || now.Sub(p.since) < time.Second {
			return
		}
		p.frame = (p.frame + 1) % len(spinFrames)
		fmt.Fprintf(p.errw, "\r\033[K%s waiting for %s %s", spinFrames[p.frame], p.waiting, now.Sub(p.since).Truncate(100*time.Millisecond))
		p.spun = true
		return
	}
	if quiet := now.Sub(p.lastSeen); quiet >= 3*time.Second && int(quiet.Seconds())%3 == 0 {
		fmt.Fprintf(p.errw, "… still waiting for %s (%ds)\n", p.waiting, int(quiet.Seconds()))
	}
}

// unspin erases the spinner, before anything else is printed.
func (p *printer) unspin() {
	if p.spun {
		fmt.Fprint(p.errw, "\r\033[K")
		p.spun = false
	}
}

// wait records what the run now waits for ("" for nothing).
func (p *printer) wait(what string) {
	if what != p.waiting {
		p.since = time.Now()
	}
	p.waiting = what
	if what == "" {
		p.unspin()
	}
}

func (p *printer) newline() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endLine()
}

func (p *printer) endLine() {
	p.unspin()
	if p.midLine {
		fmt.Fprintln(p.out)
		p.midLine = false
	}
}

// Emit implements actoviq.EventSink.
func (p *printer) Emit(_ context.Context, ev actoviq.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastSeen = time.Now()
	if p.json {
		b, _ := json.Marshal(ev)
		fmt.Fprintf(p.out, "%s\n", b)
		return
	}
	data, err := ev.Payload()
	if err != nil {
		return // a payload this build cannot read is not worth a line
	}
	line := func(format string, args ...any) {
		p.endLine()
		fmt.Fprintf(p.out, format+"\n", args...)
	}
	switch d := data.(type) {
	case *actoviq.ModelRequestData:
		p.deltas = false
		p.wait(fmt.Sprintf("the model (turn %d)", d.Turn))
	case *actoviq.TextDeltaData:
		p.wait("")
		p.unspin()
		p.deltas = true
		fmt.Fprint(p.out, d.Delta)
		p.midLine = d.Delta != "" && d.Delta[len(d.Delta)-1] != '\n'
	case *actoviq.ModelResponseData:
		p.wait("")
		if !p.deltas { // not streamed (--no-stream): the text comes whole
			p.unspin()
			for _, it := range d.Items {
				if it.Type == item.TypeText && it.Text != "" {
					line("%s", strings.TrimRight(it.Text, "\n"))
				}
			}
		}
	case *actoviq.ModelAttemptData:
		msg := fmt.Sprintf("↻ model call attempt %d failed", d.Number)
		if d.Status != 0 {
			msg += fmt.Sprintf(" (status %d)", d.Status)
		} else if d.Err != "" {
			msg += fmt.Sprintf(" (%s)", d.Err)
		}
		if d.Wait > 0 {
			msg += fmt.Sprintf("; retrying in %s", d.Wait)
		}
		line("%s", msg)
		if d.Wait > 0 {
			p.wait(fmt.Sprintf("the retry of the model call (attempt %d, backoff %s)", d.Number+1, d.Wait))
		}
	case *actoviq.ToolProbedData:
		line("? probe for call %s answered %s: %s", d.CallID, d.Outcome, d.Evidence)
	case *actoviq.ToolHandleData:
		line("⌁ call %s recorded %s", d.CallID, d.Evidence)
	case *actoviq.ToolCallData:
		p.toolLine(ev, d, line)
	case *actoviq.RunStartedData:
		if ev.Type == actoviq.EvRunResumed {
			line("resuming run %s", ev.RunID)
		}
		if ev.Type == actoviq.EvRunStarted && d.Session != "" {
			s := fmt.Sprintf("session %s from revision %d: %d items of it", d.Session, d.SessionRevision, d.SessionItems)
			if d.SessionOmitted > 0 {
				s += fmt.Sprintf("; the session window left out %d earlier items (--session-window all sends them)", d.SessionOmitted)
			}
			line("%s", s)
		}
	}
}

func (p *printer) toolLine(ev actoviq.Event, d *actoviq.ToolCallData, line func(string, ...any)) {
	switch ev.Type {
	case actoviq.EvToolAwaiting:
		line("⏸ %s (%s) call %s awaits approval", d.Tool, d.Effect, d.CallID)
	case actoviq.EvToolApproved:
		line("✓ %s call %s approved", d.Tool, d.CallID)
	case actoviq.EvToolRejected:
		line("✗ %s call %s rejected", d.Tool, d.CallID)
	case actoviq.EvToolStarted:
		p.started[d.CallID] = ev.Time
		p.wait(fmt.Sprintf("tool %s (call %s)", d.Tool, d.CallID))
		line("→ %s (%s) call %s started, attempt %d, key %s", d.Tool, d.Effect, d.CallID, d.Attempt, d.IdempotencyKey)
	case actoviq.EvToolCommitted:
		p.wait("")
		line("✓ %s call %s committed%s", d.Tool, d.CallID, p.took(d.CallID, ev.Time))
	case actoviq.EvToolUnknown:
		p.wait("")
		line("? %s call %s: outcome unknown%s — it will not be run again without a decision", d.Tool, d.CallID, p.took(d.CallID, ev.Time))
	case actoviq.EvToolSkipped:
		line("✗ %s call %s not run (the model gets an error result)", d.Tool, d.CallID)
	case actoviq.EvToolSettled:
		line("✓ %s call %s settled", d.Tool, d.CallID)
	case actoviq.EvToolReexecute:
		line("↻ %s call %s will run again with the same key", d.Tool, d.CallID)
	}
}

func (p *printer) took(callID string, at time.Time) string {
	if s, ok := p.started[callID]; ok {
		return fmt.Sprintf(" in %s", at.Sub(s).Round(time.Millisecond))
	}
	return ""
}
