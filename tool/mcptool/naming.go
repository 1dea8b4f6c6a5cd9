package mcptool

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actoviq/actoviq-go/tool"
)

// Separator joins a server name and a tool name: "<server>__<tool>".
const Separator = "__"

var (
	toolNameOK  = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,128}$`)
	invalidRune = regexp.MustCompile(`[^a-zA-Z0-9_.-]`)
)

// QualifiedName returns the name the model sees for a server's tool:
// "<server>__<tool>". Server names never contain "__" nor end in "_", so
// the name is unique across servers. A tool name with characters outside
// [a-zA-Z0-9_.-], or a result longer than 128 characters, is made valid by
// replacing those characters with "_" (and truncating) and appending "_"
// and 8 hex digits of the original name's SHA-256, so the result stays
// stable across processes and distinct tools stay distinct.
func QualifiedName(server, toolName string) string {
	q := server + Separator + toolName
	if toolNameOK.MatchString(q) {
		return q
	}
	sum := sha256.Sum256([]byte(toolName))
	suffix := "_" + hex.EncodeToString(sum[:4])
	clean := invalidRune.ReplaceAllString(toolName, "_")
	room := 128 - len(server) - len(Separator) - len(suffix)
	if len(clean) > room {
		clean = clean[:room]
	}
	return server + Separator + clean + suffix
}

// effectFor decides a tool's effect: the configuration's override first;
// then, only for a trusted server, the annotations (readOnlyHint → read;
// idempotentHint with destructiveHint explicitly false → idempotent-write;
// a missing destructiveHint means destructive, as the MCP spec says);
// everything else is side-effect.
func effectFor(ann *mcp.ToolAnnotations, trusted bool, override *tool.Effect) tool.Effect {
	if override != nil {
		return *override
	}
	if !trusted || ann == nil {
		return tool.SideEffect
	}
	if ann.ReadOnlyHint {
		return tool.Read
	}
	if ann.IdempotentHint && ann.DestructiveHint != nil && !*ann.DestructiveHint {
		return tool.IdempotentWrite
	}
	return tool.SideEffect
}

// describe builds the description the model sees.
func describe(t *mcp.Tool) string {
	d := strings.TrimSpace(t.Description)
	title := t.Title
	if title == "" && t.Annotations != nil {
		title = t.Annotations.Title
	}
	if title != "" && d == "" {
		return title
	}
	return d
}
