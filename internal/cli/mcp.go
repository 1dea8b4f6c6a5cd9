package cli

import (
	"context"
	"io"

	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/mcptool"
)

// mcpTools connects the MCP servers of a config file and lists their tools.
// Server env and headers (secrets) are read from the file each time and
// never stored with a run.
func (e *env) mcpTools(ctx context.Context, path string) ([]tool.Tool, io.Closer, error) {
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
	src, err := mcptool.New(cfg, opts)
	if err != nil {
		return nil, nil, usageErr("--mcp-config %s: %v", path, err)
	}
	tools, err := src.Tools(ctx)
	if err != nil {
		src.Close()
		return nil, nil, usageErr("--mcp-config %s: list tools: %v", path, err)
	}
	return tools, src, nil
}
