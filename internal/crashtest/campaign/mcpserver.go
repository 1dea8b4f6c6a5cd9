package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// mcpServe is a tiny MCP server over stdio (newline-delimited JSON-RPC
// 2.0), spoken by hand so the campaign needs no server library: tools
// balance and charge, each logging the idempotency key from the request's
// _meta (fsynced) before it answers. Its pid goes to pidDir, so the
// campaign can wait for it to be gone before it reads the log.
func mcpServe(logPath, pidDir string) error {
	if err := os.MkdirAll(pidDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(pidDir, strconv.Itoa(os.Getpid())), nil, 0o644); err != nil {
		return err
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 64<<10), 4<<20)
	out := bufio.NewWriter(os.Stdout)
	reply := func(id json.RawMessage, result any, rpcErr map[string]any) error {
		msg := map[string]any{"jsonrpc": "2.0", "id": id}
		if rpcErr != nil {
			msg["error"] = rpcErr
		} else {
			msg["result"] = result
		}
		b, err := json.Marshal(msg)
		if err != nil {
			return err
		}
		if _, err := out.Write(append(b, '\n')); err != nil {
			return err
		}
		return out.Flush()
	}
	schema := map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}}
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			return fmt.Errorf("mcp server: bad message: %w", err)
		}
		if len(req.ID) == 0 {
			continue // a notification
		}
		var err error
		switch req.Method {
		case "initialize":
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			_ = json.Unmarshal(req.Params, &p)
			err = reply(req.ID, map[string]any{
				"protocolVersion": p.ProtocolVersion,
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]any{"name": "campaign-bank", "version": "1"},
			}, nil)
		case "ping":
			err = reply(req.ID, map[string]any{}, nil)
		case "tools/list":
			err = reply(req.ID, map[string]any{"tools": []any{
				map[string]any{"name": "balance", "description": "Reads the balance; logs each call.", "inputSchema": schema},
				map[string]any{"name": "charge", "description": "Charges the card; logs each call.", "inputSchema": schema},
			}}, nil)
		case "tools/call":
			var p struct {
				Name      string         `json:"name"`
				Arguments map[string]any `json:"arguments"`
				Meta      map[string]any `json:"_meta"`
			}
			if jerr := json.Unmarshal(req.Params, &p); jerr != nil {
				err = reply(req.ID, nil, map[string]any{"code": -32602, "message": jerr.Error()})
				break
			}
			key, _ := p.Meta["io.actoviq/idempotency-key"].(string)
			if aerr := appendJSON(logPath, effectLine{Tool: "mcp:" + p.Name, Key: key}); aerr != nil {
				return aerr
			}
			err = reply(req.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": p.Name + " done " + key}}}, nil)
		default:
			err = reply(req.ID, nil, map[string]any{"code": -32601, "message": "method not found: " + req.Method})
		}
		if err != nil {
			return err
		}
	}
	return in.Err()
}
