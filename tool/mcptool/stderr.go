package mcptool

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// A stdio server that fails to start usually says why on its standard
// error ("Error: None of the specified directories are accessible") while
// the client only sees the pipe close ("client is closing: EOF"). The last
// lines are kept, scrubbed of the server's secrets, and added to the
// connect error.

const (
	stderrTailLines   = 8
	stderrTailLineMax = 400
)

// stderrTail keeps the last lines one server process wrote to its standard
// error, and passes everything on to next (Options.Stderr) unchanged.
type stderrTail struct {
	next io.Writer

	mu    sync.Mutex
	lines []string
	part  []byte
}

func (t *stderrTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.next != nil {
		_, _ = t.next.Write(p) // a failing log must not break the server's pipe
	}
	t.part = append(t.part, p...)
	for {
		i := bytes.IndexByte(t.part, '\n')
		if i < 0 {
			break
		}
		t.push(string(t.part[:i]))
		t.part = t.part[i+1:]
	}
	if len(t.part) > stderrTailLineMax*4 {
		t.push(string(t.part))
		t.part = nil
	}
	return len(p), nil
}

func (t *stderrTail) push(line string) {
	line = strings.TrimRight(line, "\r")
	if strings.TrimSpace(line) == "" {
		return
	}
	if len(line) > stderrTailLineMax {
		line = line[:stderrTailLineMax] + "…"
	}
	t.lines = append(t.lines, line)
	if len(t.lines) > stderrTailLines {
		t.lines = t.lines[len(t.lines)-stderrTailLines:]
	}
}

// last is the kept lines, with an unfinished last line, joined by " | ".
func (t *stderrTail) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := append([]string(nil), t.lines...)
	if p := strings.TrimSpace(string(t.part)); p != "" {
		lines = append(lines, p)
	}
	return strings.Join(lines, " | ")
}

// stderrError is a connect error with what the server last wrote to its
// standard error.
type stderrError struct {
	err  error
	text string // scrubbed
}

func (e *stderrError) Error() string {
	return e.err.Error() + "; the server's stderr ended with: " + e.text
}

func (e *stderrError) Unwrap() error { return e.err }

// stderrSink is the standard error of a new server process: a fresh tail
// over Options.Stderr.
func (sv *server) stderrSink() io.Writer {
	t := &stderrTail{next: sv.src.opts.Stderr}
	sv.mu.Lock()
	sv.tail = t
	sv.mu.Unlock()
	return t
}

// withStderr adds the server's last stderr lines, scrubbed, to a connect
// error. The SDK closes a session whose handshake failed and waits for the
// process, so by then everything the server wrote has been read.
func (sv *server) withStderr(err error) error {
	sv.mu.Lock()
	t := sv.tail
	sv.mu.Unlock()
	if err == nil || t == nil {
		return err
	}
	s := t.last()
	if s == "" {
		return err
	}
	if sv.scrub != nil {
		s = sv.scrub.Text(s)
	}
	return &stderrError{err: err, text: s}
}
