package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
)

// printer is the event sink of run and resume. For a person it streams the
// model's text, one line per tool state change with its duration, retries
// with their wait, and a progress line while a model or tool call takes
// long. With --json it writes each event envelope as one line.
type printer struct {
	out, errw io.Writer
	json      bool

	mu       sync.Mutex
	midLine  bool
	started  map[string]time.Time // call id → started
	waiting  string               // what we wait for
	lastSeen time.Time
	done     chan struct{}
	once     sync.Once
}

func newPrinter(out, errw io.Writer, jsonOut bool) *printer {
	p := &printer{out: out, errw: errw, json: jsonOut, started: map[string]time.Time{}, done: make(chan struct{}), lastSeen: time.Now()}
	if !jsonOut {
		go p.progress()
	}
	return p
}

// stop ends the progress reporter.
func (p *printer) stop() { p.once.Do(func() { close(p.done) }) }

// progress prints a line to stderr every few seconds of silence.
func (p *printer) progress() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case now := <-t.C:
			p.mu.Lock()
			if p.waiting != "" {
				if quiet := now.Sub(p.lastSeen); quiet >= 3*time.Second && int(quiet.Seconds())%3 == 0 {
					fmt.Fprintf(p.errw, "… still waiting for %s (%ds)\n", p.waiting, int(quiet.Seconds()))
				}
			}
			p.mu.Unlock()
		}
	}
}

func (p *printer) newline() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endLine()
}

func (p *printer) endLine() {
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
		p.waiting = fmt.Sprintf("the model (turn %d)", d.Turn)
	case *actoviq.TextDeltaData:
		p.waiting = ""
		fmt.Fprint(p.out, d.Delta)
		p.midLine = d.Delta != "" && d.Delta[len(d.Delta)-1] != '\n'
	case *actoviq.ModelResponseData:
		p.waiting = ""
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
	case *actoviq.ToolProbedData:
		line("? probe for call %s answered %s: %s", d.CallID, d.Outcome, d.Evidence)
	case *actoviq.ToolCallData:
		p.toolLine(ev, d, line)
	case *actoviq.RunStartedData:
		if ev.Type == actoviq.EvRunResumed {
			line("resuming run %s", ev.RunID)
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
		p.waiting = fmt.Sprintf("tool %s (call %s)", d.Tool, d.CallID)
		line("→ %s (%s) call %s started, attempt %d, key %s", d.Tool, d.Effect, d.CallID, d.Attempt, d.IdempotencyKey)
	case actoviq.EvToolCommitted:
		p.waiting = ""
		line("✓ %s call %s committed%s", d.Tool, d.CallID, p.took(d.CallID, ev.Time))
	case actoviq.EvToolUnknown:
		p.waiting = ""
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
