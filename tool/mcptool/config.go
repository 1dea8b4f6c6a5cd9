package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actoviq/actoviq-go/tool"
)

// Config is the configuration file: an "mcpServers" object keyed by server
// name, in the shape other agent tools use, plus actoviq's additions
// (trustAnnotations, tools, allowedTools). See the package documentation for
// the format.
type Config struct {
	// Servers maps each server's name (used in qualified tool names and in
	// errors) to its settings.
	Servers map[string]*ServerConfig `json:"mcpServers"`
}

// ServerConfig configures one server. Exactly one of Command (stdio) and
// URL (streamable HTTP) is set, unless Connect is.
type ServerConfig struct {
	// Type is optional: "stdio", or "http" (also "streamable-http",
	// "streamableHttp"). When set it must agree with Command or URL.
	Type string `json:"type,omitempty"`

	// Command, Args, Env and Cwd start a stdio server. The child gets a
	// small default environment (PATH, HOME, USER, LOGNAME, SHELL, TERM,
	// TMPDIR, LANG and, on Windows, SYSTEMROOT and friends) plus Env; the
	// rest of this process's environment, which may hold other secrets, is
	// not passed on. Env values may be written "${NAME}" to take them from
	// this process's environment. Env values are secrets: they never reach
	// an error text, event, log or Spec.
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`

	// URL and Headers reach a streamable-HTTP server. Header values may be
	// written "${NAME}" like Env values, and are secrets too, as are the
	// URL's password and query values.
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`

	// OAuth configures MCP authorization for a streamable-HTTP server (see
	// [OAuthConfig]). Without it, a server that answers 401 is still
	// authorized with the authorization code flow, registering this client
	// dynamically; a server with an "Authorization" header is never
	// authorized by this package.
	OAuth *OAuthConfig `json:"oauth,omitempty"`

	// TrustAnnotations lets the server's tool annotations (readOnlyHint,
	// idempotentHint, destructiveHint) set a tool's effect. Default false:
	// every tool of an untrusted server is side-effect unless Tools names
	// its effect.
	TrustAnnotations bool `json:"trustAnnotations,omitempty"`

	// Tools overrides, per server tool name, the effect and approval.
	Tools map[string]ToolOverride `json:"tools,omitempty"`

	// AllowedTools, when non-nil, lists the only server tools that are
	// offered to the model. An empty list offers none.
	AllowedTools []string `json:"allowedTools,omitempty"`

	// Disabled skips the server.
	Disabled bool `json:"disabled,omitempty"`

	// Connect, when set, replaces Command and URL: it returns a fresh
	// transport for every connection (an in-memory server in tests, or a
	// transport this package does not configure). It is not part of the
	// file format.
	Connect func(ctx context.Context) (mcp.Transport, error) `json:"-"`
}

// ToolOverride sets what the configuration says about one tool.
type ToolOverride struct {
	// Effect, when set, is the tool's effect, whatever its annotations
	// say: "read", "idempotent-write" or "side-effect".
	Effect *tool.Effect `json:"effect,omitempty"`
	// RequireApproval makes every call of the tool wait for a person.
	RequireApproval bool `json:"requireApproval,omitempty"`
}

// ConfigError reports a configuration problem, naming the server and the
// field. It never includes an env or header value.
type ConfigError struct {
	// Server names the server; "" for a file-level problem.
	Server string
	// Field is the JSON path of the bad field, e.g. "command", "env.API_KEY"
	// or "tools.write_file.effect".
	Field string
	// Reason says what is wrong.
	Reason string
}

func (e *ConfigError) Error() string {
	switch {
	case e.Server == "" && e.Field == "":
		return "mcptool: config: " + e.Reason
	case e.Server == "":
		return fmt.Sprintf("mcptool: config: %s: %s", e.Field, e.Reason)
	case e.Field == "":
		return fmt.Sprintf("mcptool: config: server %q: %s", e.Server, e.Reason)
	}
	return fmt.Sprintf("mcptool: config: server %q: %s: %s", e.Server, e.Field, e.Reason)
}

// LoadConfig reads and validates a configuration file.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mcptool: config: %w", err)
	}
	return ParseConfig(b)
}

// ParseConfig decodes and validates a configuration file. Unknown fields
// are errors, so that a misspelt "trustAnnotations" does not silently
// leave a server untrusted (or the reverse).
func ParseConfig(b []byte) (*Config, error) {
	var raw struct {
		Servers map[string]json.RawMessage `json:"mcpServers"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		// Never echo the document: it may hold secrets.
		return nil, &ConfigError{Reason: "not a JSON object with an \"mcpServers\" object: " + jsonErrorText(err)}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &ConfigError{Reason: "trailing data after the JSON object"}
	}
	if raw.Servers == nil {
		return nil, &ConfigError{Field: "mcpServers", Reason: "missing"}
	}
	c := &Config{Servers: map[string]*ServerConfig{}}
	for name, rs := range raw.Servers {
		var sc ServerConfig
		d := json.NewDecoder(bytes.NewReader(rs))
		d.DisallowUnknownFields()
		if err := d.Decode(&sc); err != nil {
			return nil, &ConfigError{Server: name, Reason: jsonErrorText(err)}
		}
		c.Servers[name] = &sc
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// jsonErrorText describes a decoding error without quoting the input.
func jsonErrorText(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("field %q: want %s, got a JSON %s", te.Field, te.Type, te.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	case strings.Contains(err.Error(), "unknown effect"):
		return `"effect" must be "read", "idempotent-write" or "side-effect"`
	}
	return "invalid JSON"
}

// serverNamePattern: names become the prefix of tool names. No "__" and no
// trailing "_", so the first "__" of a tool name always ends the server
// name and two servers never produce the same tool name.
var (
	serverNamePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_-]{0,47}$`)
	envNamePattern    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerNamePattern = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	varRef            = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)
)

// Validate checks every server and names the first bad server and field.
// Servers are checked in name order, so the error is stable.
func (c *Config) Validate() error {
	if c == nil || c.Servers == nil {
		return &ConfigError{Field: "mcpServers", Reason: "missing"}
	}
	names := make([]string, 0, len(c.Servers))
	for n := range c.Servers {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := c.Servers[n].validate(n); err != nil {
			return err
		}
	}
	return nil
}

func (s *ServerConfig) validate(name string) error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Server: name, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if !serverNamePattern.MatchString(name) || strings.Contains(name, "__") || strings.HasSuffix(name, "_") {
		return &ConfigError{Server: name, Reason: `invalid server name: use 1-48 letters, digits, "_" or "-", starting with a letter or digit, without "__" and not ending in "_"`}
	}
	if s == nil {
		return &ConfigError{Server: name, Reason: "null server"}
	}
	if s.Disabled {
		return nil
	}
	switch {
	case s.Connect != nil:
	case s.Command != "" && s.URL != "":
		return bad("url", `set either "command" (stdio) or "url" (streamable HTTP), not both`)
	case s.Command == "" && s.URL == "":
		return bad("command", `missing: set "command" (stdio) or "url" (streamable HTTP)`)
	}
	switch s.Type {
	case "":
	case "stdio":
		if s.Command == "" && s.Connect == nil {
			return bad("command", `missing for "type": "stdio"`)
		}
	case "http", "streamable-http", "streamableHttp":
		if s.URL == "" && s.Connect == nil {
			return bad("url", `missing for "type": %q`, s.Type)
		}
	default:
		return bad("type", `unsupported %q: want "stdio" or "http" (the legacy SSE transport is not supported)`, s.Type)
	}
	if s.URL != "" {
		for _, f := range []string{"args", "env", "cwd"} {
			if (f == "args" && len(s.Args) > 0) || (f == "env" && len(s.Env) > 0) || (f == "cwd" && s.Cwd != "") {
				return bad(f, `only for stdio servers ("command")`)
			}
		}
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("url", "must be an absolute http or https URL")
		}
	}
	if s.OAuth != nil {
		if s.URL == "" && s.Connect == nil {
			return bad("oauth", `only for streamable-HTTP servers ("url")`)
		}
		if err := s.OAuth.validate(bad, s.Headers); err != nil {
			return err
		}
	}
	if s.Command != "" && len(s.Headers) > 0 {
		return bad("headers", `only for streamable-HTTP servers ("url")`)
	}
	for k, v := range s.Env {
		if !envNamePattern.MatchString(k) {
			return bad("env", "invalid variable name %q", k)
		}
		if err := checkRefs(v); err != nil {
			return bad("env."+k, "%v", err)
		}
	}
	for k, v := range s.Headers {
		if !headerNamePattern.MatchString(k) {
			return bad("headers", "invalid header name %q", k)
		}
		switch http.CanonicalHeaderKey(k) {
		case "Idempotency-Key", "X-Idempotency-Key":
			// net/http replays a POST that carries one of these after
			// some connection failures: a tools/call must never be
			// replayed.
			return bad("headers."+k, "not allowed: it would let Go's HTTP transport replay a tools/call")
		case "Content-Type", "Accept", "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-Id", "Content-Length", "Host":
			return bad("headers."+k, "set by the MCP transport; it cannot be configured")
		}
		if err := checkRefs(v); err != nil {
			return bad("headers."+k, "%v", err)
		}
		if strings.ContainsAny(v, "\r\n") {
			return bad("headers."+k, "value contains a line break")
		}
	}
	if s.AllowedTools != nil {
		seen := map[string]bool{}
		for i, t := range s.AllowedTools {
			if t == "" {
				return bad(fmt.Sprintf("allowedTools[%d]", i), "empty tool name")
			}
			if seen[t] {
				return bad(fmt.Sprintf("allowedTools[%d]", i), "%q listed twice", t)
			}
			seen[t] = true
		}
	}
	for t, o := range s.Tools {
		if t == "" {
			return bad("tools", "empty tool name")
		}
		if o.Effect != nil && !o.Effect.Valid() {
			return bad("tools."+t+".effect", `must be "read", "idempotent-write" or "side-effect"`)
		}
		if s.AllowedTools != nil && !slices.Contains(s.AllowedTools, t) {
			return bad("tools."+t, "the tool is not in allowedTools")
		}
	}
	return nil
}

// checkRefs rejects a "${" that is not a well-formed reference.
func checkRefs(v string) error {
	rest := varRef.ReplaceAllString(v, "")
	if strings.Contains(rest, "${") {
		return errors.New(`malformed "${NAME}" reference`)
	}
	return nil
}

// expand replaces ${NAME} references with values from lookup. A missing
// variable is an error naming the variable, never the value.
func expand(v string, lookup func(string) (string, bool)) (string, error) {
	var missing string
	out := varRef.ReplaceAllStringFunc(v, func(ref string) string {
		name := ref[2 : len(ref)-1]
		val, ok := lookup(name)
		if !ok && missing == "" {
			missing = name
		}
		return val
	})
	if missing != "" {
		return "", fmt.Errorf("environment variable %s is not set", missing)
	}
	return out, nil
}
