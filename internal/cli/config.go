package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/approvals"
	"github.com/actoviq/actoviq-go/internal/redact"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storepg"
	"github.com/actoviq/actoviq-go/store/storesqlite"
	"github.com/actoviq/actoviq-go/tool"
)

// common are the flags every command takes.
type common struct {
	store  string
	tenant string
	// approvals is the approvals policy file (--approvals, else
	// $ACTOVIQ_APPROVALS): who may decide what.
	approvals string
	// mustExist: the command reads existing runs, so a SQLite file that
	// does not exist is an error, not a new store.
	mustExist bool
}

func (c *common) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.store, "store", "", "store URL: sqlite:PATH or postgres://... (default $ACTOVIQ_STORE, else sqlite:actoviq.db)")
	cmd.Flags().StringVar(&c.tenant, "tenant", store.DefaultTenant, "tenant name")
	cmd.Flags().StringVar(&c.approvals, "approvals", "", "approvals policy file: who may approve, reject or settle which calls (default $ACTOVIQ_APPROVALS; none: anyone named)")
}

// approvers loads the approvals policy the command's runtime checks
// decisions against; nil when none is configured.
func (e *env) approvers(c *common) (approvals.Authorizer, error) {
	path := c.approvals
	if path == "" {
		path = e.getenv("ACTOVIQ_APPROVALS")
	}
	if path == "" {
		return nil, nil
	}
	p, err := approvals.Load(path)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	return p, nil
}

func (e *env) storeURL(c *common) string {
	if c.store != "" {
		return c.store
	}
	if v := e.getenv("ACTOVIQ_STORE"); v != "" {
		return v
	}
	return "sqlite:actoviq.db"
}

// checkStoreURL validates a store URL without touching anything.
func checkStoreURL(u string) error {
	switch {
	case strings.HasPrefix(u, "sqlite:"):
		if strings.TrimPrefix(u, "sqlite:") == "" {
			return usageErr("--store %q: sqlite: needs a file path", u)
		}
	case strings.HasPrefix(u, "postgres://"), strings.HasPrefix(u, "postgresql://"):
		if _, err := url.Parse(u); err != nil {
			return usageErr("--store: invalid PostgreSQL URL: %v", err)
		}
	default:
		return usageErr("--store %q: want sqlite:PATH or a postgres:// URL", redactURL(u))
	}
	return nil
}

// redactURL hides a URL's password, and its secret query values, for
// messages.
func redactURL(u string) string { return redact.New().Text(u) }

// baseURLWithoutCredentials refuses a --base-url that carries a credential,
// as user:password or as a query parameter with a secret name (?key=...,
// ?api_key=..., ?key=...): the URL is stored with the run, in the clear, so that a
// resume reaches the same server.
func baseURLWithoutCredentials(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return nil // the provider refuses it with its own reason
	}
	if u.User != nil {
		return usageErr("--base-url must not carry credentials (they would be stored with the run); use the API key variable")
	}
	r := redact.New()
	for k := range u.Query() {
		if r.IsSecretKey(k) || strings.EqualFold(k, "key") { // ?key= is an API key's usual name in a URL
			return usageErr("--base-url must not carry credentials (its query parameter %q would be stored with the run); use the API key variable", k)
		}
	}
	return nil
}

// openStore opens the store. A PostgreSQL URL may carry the schema in the
// actoviq_schema query parameter (default "actoviq").
func (e *env) openStore(ctx context.Context, c *common) (store.Store, error) {
	u := e.storeURL(c)
	if err := checkStoreURL(u); err != nil {
		return nil, err
	}
	if path, ok := strings.CutPrefix(u, "sqlite:"); ok {
		if c.mustExist {
			if _, err := os.Stat(path); err != nil {
				return nil, usageErr("no store at %s (%v): give --store (or set ACTOVIQ_STORE to) the store the run was started with", u, errors.Unwrap(err))
			}
		}
		s, err := storesqlite.Open(path, &storesqlite.Config{Warn: func(msg string) {
			fmt.Fprintln(e.stderr, "actoviq: "+strings.Replace(msg, "storesqlite: ", "", 1))
		}})
		if err != nil {
			return nil, usageErr("open store %s: %v", u, err)
		}
		return s, nil
	}
	p, _ := url.Parse(u)
	q := p.Query()
	schema := q.Get("actoviq_schema")
	q.Del("actoviq_schema")
	p.RawQuery = q.Encode()
	s, err := storepg.Open(ctx, p.String(), &storepg.Config{Schema: schema})
	if err != nil {
		return nil, usageErr("open store %s: %v", redactURL(u), err)
	}
	return s, nil
}

// runtime opens the store and a runtime over it.
func (e *env) runtime(ctx context.Context, c *common, sinks ...actoviq.EventSink) (*actoviq.Runtime, func(), error) {
	if c.tenant == "" {
		return nil, nil, usageErr("--tenant must not be empty")
	}
	codec, err := e.codec()
	if err != nil {
		return nil, nil, err
	}
	pol, err := e.approvers(c)
	if err != nil {
		return nil, nil, err
	}
	st, err := e.openStore(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	rt, err := actoviq.New(st, &actoviq.Config{Tenant: c.tenant, Sinks: sinks, Codec: codec, Approvers: pol})
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return rt, func() { rt.Close(); st.Close() }, nil
}

// runConfig is how a run was started. It is stored with the run (never a
// secret) so that resume needs only the run id.
type runConfig struct {
	Provider  string `json:"provider"`
	Model     string `json:"model"`
	BaseURL   string `json:"base_url,omitempty"`
	System    string `json:"system,omitempty"`
	MCPConfig string `json:"mcp_config,omitempty"`
	// MCPLog is the file the stdio MCP servers' standard error is
	// appended to.
	MCPLog     string `json:"mcp_log,omitempty"`
	Approve    string `json:"approve"`
	Recover    string `json:"recover"`
	MaxRetries *int   `json:"max_retries,omitempty"`
	Timeout    string `json:"timeout,omitempty"`
	DemoBank   string `json:"demo_bank,omitempty"`
	NoStream   bool   `json:"no_stream,omitempty"`
	// OpenAINoStore sends store:false with encrypted reasoning
	// (openai-responses only).
	OpenAINoStore bool `json:"openai_no_store,omitempty"`
	// DemoNoProbe leaves the demo bank's probe out.
	DemoNoProbe bool `json:"demo_no_probe,omitempty"`
	// demoCrash is never remembered: a resume does not crash again unless
	// asked.
	demoCrash string
	// jsonOut: stdout carries JSON events only, so the demo bank's notices
	// go to stderr. Not remembered.
	jsonOut bool
}

// agentFlags are the flags that define the agent, shared by run and resume.
type agentFlags struct {
	model         string
	baseURL       string
	mcpConfig     string
	mcpLog        string
	system        string
	approve       string
	recover       string
	maxRetries    int
	timeout       time.Duration
	demoBank      string
	demoCrash     string
	demoNoProbe   bool
	noStream      bool
	openaiNoStore bool
}

func (f *agentFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.model, "model", "", "PROVIDER:MODEL: openai:gpt-4.1, openai-responses:o4-mini, anthropic:claude-sonnet-4-5, scripted:path/to/script.json")
	fl.StringVar(&f.baseURL, "base-url", "", "provider base URL (for OpenAI-compatible servers)")
	fl.StringVar(&f.mcpConfig, "mcp-config", "", "MCP servers config file (mcpServers JSON)")
	fl.StringVar(&f.mcpLog, "mcp-log", "", "append the stdio MCP servers' standard error to this file (remembered by resume; a failed connect shows the last lines anyway)")
	fl.StringVar(&f.system, "system", "", "system instructions")
	fl.StringVar(&f.approve, "approve", "side-effect", "which calls need approval: side-effect, all or none")
	fl.StringVar(&f.recover, "recover", "none", "re-run started reads and keyed idempotent writes on resume: safe or none")
	fl.IntVar(&f.maxRetries, "max-retries", 2, "provider retries per model call (0 turns retries off)")
	fl.DurationVar(&f.timeout, "timeout", 0, "run deadline from its start (0: none)")
	fl.BoolVar(&f.openaiNoStore, "openai-no-store", false, "openai-responses: send store:false and get the reasoning back encrypted, for zero data retention (remembered by resume)")
	fl.BoolVar(&f.noStream, "no-stream", false, "ask the model for whole responses instead of streaming them (remembered by resume; --no-stream=false turns streaming back on)")
	fl.StringVar(&f.demoBank, "demo-bank", "", "add the demo's tools (lookup_invoice, pay_invoice with a probe) paying into this file")
	fl.StringVar(&f.demoCrash, "demo-crash", "", "with --demo-bank: the process SIGKILLs itself before-pay or after-pay, to try a crash (not remembered)")
	fl.BoolVar(&f.demoNoProbe, "demo-no-probe", false, "with --demo-bank: the bank has no probe, so a crash mid-payment needs a person's decision")
}

// config merges flags over a remembered config: a flag given on the
// command line wins.
func (f *agentFlags) config(cmd *cobra.Command, base *runConfig) (*runConfig, error) {
	c := runConfig{Approve: "side-effect", Recover: "none"}
	if base != nil {
		c = *base
	}
	changed := func(name string) bool { return base == nil || cmd.Flags().Changed(name) }
	if changed("model") {
		if f.model == "" {
			return nil, usageErr("--model is required (PROVIDER:MODEL)")
		}
		prov, model, ok := strings.Cut(f.model, ":")
		if !ok || prov == "" || model == "" {
			return nil, usageErr("--model %q: want PROVIDER:MODEL", f.model)
		}
		c.Provider, c.Model = prov, model
		if prov == "scripted" {
			// Paths are remembered absolute: a resume from another
			// directory must use the same files, not others by the same name.
			c.Model = absPath(model)
		}
	}
	if changed("base-url") {
		if err := baseURLWithoutCredentials(f.baseURL); err != nil {
			return nil, err
		}
		c.BaseURL = f.baseURL
	}
	if changed("mcp-log") {
		c.MCPLog = absPath(f.mcpLog)
	}
	if changed("mcp-config") {
		c.MCPConfig = absPath(f.mcpConfig)
	}
	if changed("system") {
		c.System = f.system
	}
	if changed("approve") {
		c.Approve = f.approve
	}
	if changed("recover") {
		c.Recover = f.recover
	}
	if changed("max-retries") {
		n := f.maxRetries
		c.MaxRetries = &n
	}
	if changed("no-stream") {
		c.NoStream = f.noStream
	}
	if changed("openai-no-store") {
		c.OpenAINoStore = f.openaiNoStore
	}
	if changed("demo-bank") {
		c.DemoBank = absPath(f.demoBank)
	}
	if changed("demo-no-probe") {
		c.DemoNoProbe = f.demoNoProbe
	}
	if err := checkCrash("--demo-crash", f.demoCrash); err != nil {
		return nil, err
	}
	if f.demoCrash != "" && c.DemoBank == "" {
		return nil, usageErr("--demo-crash goes with --demo-bank FILE")
	}
	c.demoCrash = f.demoCrash
	if changed("timeout") {
		if f.timeout < 0 {
			return nil, usageErr("--timeout must not be negative (0 means no deadline)")
		}
		c.Timeout = ""
		if f.timeout > 0 {
			c.Timeout = f.timeout.String()
		}
	}
	return &c, c.validate()
}

func (c *runConfig) validate() error {
	switch c.Provider {
	case "openai", "openai-responses", "anthropic", "scripted":
	default:
		return usageErr("--model: unknown provider %q (want openai, openai-responses, anthropic or scripted)", c.Provider)
	}
	if c.OpenAINoStore && c.Provider != "openai-responses" {
		return usageErr("--openai-no-store goes with --model openai-responses:MODEL (the Responses API); %s has no such setting", c.Provider)
	}
	if _, err := approvalEffects(c.Approve); err != nil {
		return err
	}
	if c.Recover != "safe" && c.Recover != "none" {
		return usageErr("--recover %q: want safe or none", c.Recover)
	}
	if c.MaxRetries != nil && *c.MaxRetries < 0 {
		return usageErr("--max-retries must not be negative")
	}
	if c.Timeout != "" {
		if _, err := time.ParseDuration(c.Timeout); err != nil {
			return usageErr("--timeout: %v", err)
		}
	}
	return nil
}

// absPath makes a path absolute; an empty path stays empty.
func absPath(p string) string {
	if p == "" {
		return ""
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func approvalEffects(s string) ([]tool.Effect, error) {
	switch s {
	case "side-effect":
		return []tool.Effect{tool.SideEffect}, nil
	case "all":
		return []tool.Effect{tool.SideEffect, tool.IdempotentWrite, tool.Read}, nil
	case "none":
		return nil, nil
	}
	return nil, usageErr("--approve %q: want side-effect, all or none", s)
}

// agent builds the agent a config describes. Secrets (API keys, MCP env and
// headers) are read now, from the environment and the config file; they are
// never stored. The returned closer releases MCP connections.
func (e *env) agent(ctx context.Context, c *runConfig) (*actoviq.AgentSpec, io.Closer, error) {
	prov, err := e.provider(c)
	if err != nil {
		return nil, nil, err
	}
	effects, _ := approvalEffects(c.Approve)
	a := &actoviq.AgentSpec{ID: "actoviq-cli", Instructions: c.System, Provider: prov, Model: c.Model,
		Approval: actoviq.ApprovalPolicy{Effects: effects}}
	if c.Recover == "safe" {
		a.Recovery = actoviq.RecoveryPolicy{RerunReads: true, RerunIdempotentWrites: true}
	}
	if c.Timeout != "" {
		a.Limits.RunTimeout, _ = time.ParseDuration(c.Timeout)
	}
	var closer io.Closer = nopCloser{}
	if c.MCPConfig != "" {
		tools, cl, err := e.mcpTools(ctx, c.MCPConfig, c.MCPLog)
		if err != nil {
			return nil, nil, err
		}
		a.Tools, closer = tools, cl
	}
	if c.DemoBank != "" {
		delay, _ := time.ParseDuration(e.getenv("ACTOVIQ_DEMO_BANK_DELAY"))
		out := e.stdout
		if c.jsonOut {
			out = e.stderr
		}
		a.Tools = append(a.Tools, demoTools(&bankTool{path: c.DemoBank, out: out, crash: c.demoCrash, delay: delay}, c.DemoNoProbe)...)
	}
	if e.extraTools != nil {
		a.Tools = append(a.Tools, e.extraTools...)
	}
	return a, closer, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

func (c *runConfig) meta() json.RawMessage {
	b, _ := json.Marshal(struct {
		CLI *runConfig `json:"cli"`
	}{c})
	return b
}

func configFromMeta(runID string, meta json.RawMessage) (*runConfig, error) {
	var m struct {
		CLI *runConfig `json:"cli"`
	}
	if len(meta) == 0 || json.Unmarshal(meta, &m) != nil || m.CLI == nil {
		return nil, usageErr("run %s was not started by the actoviq command: resume it from the program that started it", runID)
	}
	return m.CLI, nil
}
