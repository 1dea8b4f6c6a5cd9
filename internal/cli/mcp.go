package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/mcptool"
)

// mcpTools connects the MCP servers of a config file and lists their tools.
// Server env and headers (secrets) are read from the file each time and
// never stored with a run.
//
// logPath, when set, is the file the stdio servers' standard error is
// appended to; a failed connect shows the last lines either way.
func (e *env) mcpTools(ctx context.Context, path, logPath string) ([]tool.Tool, io.Closer, error) {
	cfg, err := mcptool.LoadConfig(path)
	if err != nil {
		return nil, nil, usageErr("--mcp-config %s: %v", path, err)
	}
	// Tokens come from the token file (`actoviq mcp login`); a run never
	// signs in, and a server that needs it says to run that command.
	opts, err := e.mcpOptions(path, nil)
	if err != nil {
		return nil, nil, err
	}
	var logf *os.File
	if logPath != "" {
		if logf, err = os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err != nil {
			return nil, nil, usageErr("--mcp-log: %v", err)
		}
		fmt.Fprintf(logf, "# actoviq: MCP servers of %s, %s\n", path, time.Now().UTC().Format(time.RFC3339))
		opts.Stderr = logf
	}
	closeLog := func() {
		if logf != nil {
			logf.Close()
		}
	}
	src, err := mcptool.New(cfg, opts)
	if err != nil {
		closeLog()
		return nil, nil, usageErr("--mcp-config %s: %v", path, err)
	}
	tools, err := src.Tools(ctx)
	if err != nil {
		src.Close()
		closeLog()
		hint := ""
		if logPath == "" {
			hint = " (--mcp-log FILE keeps everything the servers write to stderr)"
		}
		return nil, nil, usageErr("--mcp-config %s: list tools: %v%s", path, err, hint)
	}
	return tools, closers{src, closerFunc(func() error { closeLog(); return nil })}, nil
}

// closers closes each in order.
type closers []io.Closer

func (cs closers) Close() error {
	var first error
	for _, c := range cs {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }
