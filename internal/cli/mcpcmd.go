package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	actoviq "github.com/actoviq/actoviq-go"

	"github.com/actoviq/actoviq-go/internal/redact"
	"github.com/actoviq/actoviq-go/tool/mcptool"
)

// The elicitation prompt reads from the terminal. Variables, so that tests
// can play the person.
var (
	promptIn         io.Reader = os.Stdin
	promptIsTerminal           = func() bool {
		fi, err := os.Stdin.Stat()
		return err == nil && fi.Mode()&os.ModeCharDevice != 0
	}
)

// mcpFlags are the flags every mcp subcommand takes.
type mcpFlags struct {
	config string
}

func (f *mcpFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.config, "mcp-config", "mcp.json", "MCP servers config file (mcpServers JSON)")
}

func (e *env) mcpCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Sign in to MCP servers and show how they are authorized",
		Long: "MCP servers behind the MCP authorization flow (OAuth) need a sign-in once: " +
			"`actoviq mcp login NAME` prints a URL to open, waits for the browser and stores the token in " +
			"the user's config dir (mode 0600; $ACTOVIQ_MCP_TOKENS overrides the file), never in the run store. " +
			"Runs then use and refresh it.",
	}
	cmd.AddCommand(e.mcpListCmd(), e.mcpLoginCmd(), e.mcpLogoutCmd(), e.mcpTaskCmd(), e.mcpCancelTaskCmd())
	return cmd
}

// mcpTaskSource opens a source and checks that it has the server.
func (e *env) mcpTaskSource(f *mcpFlags, name string) (*mcptool.Source, error) {
	src, _, err := e.mcpSource(f, nil)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(src.Servers(), name) {
		src.Close()
		return nil, usageErr("--mcp-config %s has no enabled server %q (servers: %s)", f.config, name, strings.Join(src.Servers(), ", "))
	}
	return src, nil
}

func (e *env) mcpTaskCmd() *cobra.Command {
	var f mcpFlags
	cmd := &cobra.Command{
		Use:   "task SERVER TASK_ID",
		Short: "Show the status of an MCP task (tasks/get, a pure read)",
		Long: "A call answered with a task of the MCP Tasks extension keeps the task id on its ledger entry " +
			"(runs show lists it as evidence). This asks the server where the task is: working, input_required, " +
			"completed, failed or cancelled. A server that no longer knows the task says so.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := e.mcpTaskSource(&f, args[0])
			if err != nil {
				return err
			}
			defer src.Close()
			st, msg, err := src.TaskStatus(cmd.Context(), args[0], args[1])
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			if msg != "" {
				msg = " (" + msg + ")"
			}
			fmt.Fprintf(e.stdout, "Task %s on %s: %s%s\n", args[1], args[0], st, msg)
			return nil
		},
	}
	f.add(cmd)
	return cmd
}

func (e *env) mcpCancelTaskCmd() *cobra.Command {
	var f mcpFlags
	c := common{mustExist: true}
	var runID, callID, by string
	cmd := &cobra.Command{
		Use:   "cancel-task SERVER TASK_ID [--run RUN --call CALL]",
		Short: "Cancel an MCP task a call left running (tasks/cancel, sent once)",
		Long: "Asks the server to cancel a task of the MCP Tasks extension, for example one that a run past its " +
			"deadline left working. Cancellation is cooperative: the server may have done part of the work, so the " +
			"call's outcome stays unknown until it is settled (actoviq resolve). The request is sent once; the " +
			"exit code says whether the server acknowledged it. With --run and --call the cancel and its outcome " +
			"are recorded on that call (a tool.note event, under --by); the call must have recorded that task (its " +
			"tool.handle), or nothing is sent.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (runID == "") != (callID == "") {
				return usageErr("--run and --call go together")
			}
			var rt *actoviq.Runtime
			if runID != "" {
				if err := checkStoreURL(e.storeURL(&c)); err != nil {
					return err
				}
				r, done, err := e.runtime(cmd.Context(), &c)
				if err != nil {
					return err
				}
				defer done()
				if _, err := r.Get(cmd.Context(), runID); err != nil {
					return e.lookupErr(&c, runID, err)
				}
				// The cancel is recorded on the call whose task it is:
				// check that before anything is sent.
				if err := callHoldsTask(cmd.Context(), r, runID, callID, args[0], args[1]); err != nil {
					return err
				}
				rt = r
			}
			src, err := e.mcpTaskSource(&f, args[0])
			if err != nil {
				return err
			}
			defer src.Close()
			sent := src.CancelTask(cmd.Context(), args[0], args[1])
			if rt != nil {
				text := fmt.Sprintf("tasks/cancel sent for MCP task %s on server %s: acknowledged", args[1], args[0])
				if sent != nil {
					text = fmt.Sprintf("tasks/cancel sent for MCP task %s on server %s: failed: %v", args[1], args[0], sent)
				}
				if err := rt.NoteCall(cmd.Context(), runID, callID, actoviq.CallNote{By: by, Text: text}); err != nil {
					return &exitError{code: ExitFailed, err: fmt.Errorf("%s; recording it on call %s of run %s failed: %w", text, callID, runID, err)}
				}
				fmt.Fprintf(e.stdout, "Recorded on call %s of run %s by %s.\n", callID, runID, by)
			}
			if sent != nil {
				return &exitError{code: ExitFailed, err: sent}
			}
			fmt.Fprintf(e.stdout, "Task %s on %s: tasks/cancel acknowledged (cancellation is cooperative; check with `actoviq mcp task %s %s`).\n",
				args[1], args[0], args[0], args[1])
			return nil
		},
	}
	f.add(cmd)
	c.register(cmd)
	cmd.Flags().StringVar(&runID, "run", "", "record the cancel on this run's call (with --call)")
	cmd.Flags().StringVar(&callID, "call", "", "the call whose task it is (with --run)")
	cmd.Flags().StringVar(&by, "by", defaultUser(), "who cancels (recorded)")
	return cmd
}

// tokenStore is where the command keeps MCP tokens.
func (e *env) tokenStore() (*mcptool.FileTokenStore, error) {
	if p := e.getenv("ACTOVIQ_MCP_TOKENS"); p != "" {
		return mcptool.NewFileTokenStore(absPath(p)), nil
	}
	p, err := mcptool.DefaultTokenFile()
	if err != nil {
		return nil, usageErr("%v: set ACTOVIQ_MCP_TOKENS to a file path", err)
	}
	return mcptool.NewFileTokenStore(p), nil
}

// mcpOptions are the options every MCP source of the command uses: the
// token file, errors that name `actoviq mcp login`, and elicitation
// through the terminal. openURL is set only by mcp login.
func (e *env) mcpOptions(configPath string, openURL func(context.Context, string, string) error) (*mcptool.Options, error) {
	ts, err := e.tokenStore()
	if err != nil {
		return nil, err
	}
	hintCfg := ""
	if configPath != "" && configPath != "mcp.json" {
		hintCfg = " --mcp-config " + configPath
	}
	return &mcptool.Options{
		OAuth: &mcptool.OAuthOptions{
			Tokens:  ts,
			OpenURL: openURL,
			LoginHint: func(server string) string {
				return "run `actoviq mcp login " + server + hintCfg + "`"
			},
		},
		Elicit: (&elicitPrompt{out: e.stderr}).answer,
	}, nil
}

// mcpSource loads the config and opens a source over it.
func (e *env) mcpSource(f *mcpFlags, openURL func(context.Context, string, string) error) (*mcptool.Source, *mcptool.FileTokenStore, error) {
	cfg, err := mcptool.LoadConfig(f.config)
	if err != nil {
		return nil, nil, usageErr("--mcp-config %s: %v", f.config, err)
	}
	opts, err := e.mcpOptions(f.config, openURL)
	if err != nil {
		return nil, nil, err
	}
	src, err := mcptool.New(cfg, opts)
	if err != nil {
		return nil, nil, usageErr("--mcp-config %s: %v", f.config, err)
	}
	return src, opts.OAuth.Tokens.(*mcptool.FileTokenStore), nil
}

func (e *env) mcpListCmd() *cobra.Command {
	var f mcpFlags
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the configured MCP servers and how each is authorized (connects to none)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := mcptool.LoadConfig(f.config)
			if err != nil {
				return usageErr("--mcp-config %s: %v", f.config, err)
			}
			src, _, err := e.mcpSource(&f, nil)
			if err != nil {
				return err
			}
			defer src.Close()
			type row struct {
				Name      string    `json:"name"`
				Transport string    `json:"transport"`
				Target    string    `json:"target"`
				Auth      string    `json:"auth"`
				SignedIn  bool      `json:"signed_in,omitempty"`
				Expiry    time.Time `json:"expiry,omitzero"`
				Scopes    []string  `json:"scopes,omitempty"`
				Disabled  bool      `json:"disabled,omitempty"`
			}
			var rows []row
			names := make([]string, 0, len(cfg.Servers))
			for n := range cfg.Servers {
				names = append(names, n)
			}
			slices.Sort(names)
			for _, n := range names {
				sc := cfg.Servers[n]
				r := row{Name: n, Transport: "stdio", Target: sc.Command, Auth: "none", Disabled: sc.Disabled}
				if sc.URL != "" {
					r.Transport, r.Target = "http", mcpTarget(sc.URL)
				}
				if !sc.Disabled {
					st, err := src.AuthStatus(cmd.Context(), n)
					if err != nil {
						return &exitError{code: ExitFailed, err: err}
					}
					r.Auth, r.SignedIn, r.Expiry, r.Scopes = st.Kind, st.SignedIn, st.Expiry, st.Scopes
				}
				rows = append(rows, r)
			}
			if jsonOut {
				return writeJSON(e, rows)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SERVER\tTRANSPORT\tTARGET\tAUTHORIZATION")
			for _, r := range rows {
				var auth string
				switch {
				case r.Disabled:
					auth = "disabled"
				case r.Auth == "oauth" && r.SignedIn:
					auth = "signed in"
					if !r.Expiry.IsZero() {
						auth += ", token expires " + r.Expiry.UTC().Format(time.RFC3339)
					}
					if len(r.Scopes) > 0 {
						auth += ", scopes " + strings.Join(r.Scopes, " ")
					}
				case r.Auth == "oauth":
					auth = "OAuth, not signed in (if the server asks: actoviq mcp login " + r.Name + ")"
				case r.Auth == "header":
					auth = "Authorization header"
				case r.Auth == mcptool.GrantClientCredentials:
					auth = "OAuth client credentials"
				default:
					auth = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, r.Transport, r.Target, auth)
			}
			return tw.Flush()
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	return cmd
}

// mcpTarget shows a server URL without its user info and query (they may
// hold secrets).
func mcpTarget(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "[invalid URL]"
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = redact.Placeholder
	}
	return u.String()
}

func (e *env) mcpLoginCmd() *cobra.Command {
	var f mcpFlags
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "login SERVER",
		Short: "Sign in to an MCP server (OAuth): prints a URL to open and waits for the browser",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			var asked bool
			open := func(_ context.Context, server, authURL string) error {
				asked = true
				fmt.Fprintf(e.stderr, "To sign in to MCP server %s, open this URL in a browser on this machine:\n\n  %s\n\nWaiting for the browser to come back (up to %s; Ctrl-C gives up)...\n", server, authURL, timeout)
				return nil
			}
			src, ts, err := e.mcpSource(&f, open)
			if err != nil {
				return err
			}
			defer src.Close()
			if !slices.Contains(src.Servers(), name) {
				return usageErr("--mcp-config %s has no enabled server %q (servers: %s)", f.config, name, strings.Join(src.Servers(), ", "))
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout+time.Minute)
			defer cancel()
			st, err := src.Login(ctx, name)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			exp := ""
			if !st.Expiry.IsZero() {
				exp = " (token expires " + st.Expiry.UTC().Format(time.RFC3339) + ")"
			}
			switch {
			case asked && st.SignedIn:
				fmt.Fprintf(e.stdout, "Signed in to %s%s; the token is stored in %s.\n", name, exp, ts.Path())
			case st.SignedIn:
				fmt.Fprintf(e.stdout, "%s is already authorized%s. To sign in again: actoviq mcp logout %s, then actoviq mcp login %s.\n", name, exp, name, name)
			default:
				fmt.Fprintf(e.stdout, "%s did not ask for authorization: there is nothing to sign in to, and nothing was stored.\n", name)
			}
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().DurationVar(&timeout, "timeout", mcptool.DefaultLoginTimeout, "how long to wait for the browser")
	cmd.PreRunE = func(*cobra.Command, []string) error {
		if timeout <= 0 {
			return usageErr("--timeout %s: must be positive", timeout)
		}
		return nil
	}
	return cmd
}

func (e *env) mcpLogoutCmd() *cobra.Command {
	var f mcpFlags
	cmd := &cobra.Command{
		Use:   "logout SERVER",
		Short: "Forget the stored token of an MCP server",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			src, ts, err := e.mcpSource(&f, nil)
			if err != nil {
				return err
			}
			defer src.Close()
			if !slices.Contains(src.Servers(), name) {
				return usageErr("--mcp-config %s has no enabled server %q (servers: %s)", f.config, name, strings.Join(src.Servers(), ", "))
			}
			st, err := src.AuthStatus(cmd.Context(), name)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			if err := src.Logout(cmd.Context(), name); err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			if st.SignedIn {
				fmt.Fprintf(e.stdout, "Signed out of %s: its token was deleted from %s (the authorization server was not told).\n", name, ts.Path())
			} else {
				fmt.Fprintf(e.stdout, "No token was stored for %s.\n", name)
			}
			return nil
		},
	}
	f.add(cmd)
	return cmd
}

// elicitPrompt asks the person at the terminal what an MCP server wants to
// know; without a terminal it declines and says so.
type elicitPrompt struct {
	out io.Writer
	mu  sync.Mutex // one question at a time
	in  *bufio.Reader
}

type elicitProperty struct {
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Default     any    `json:"default"`
	Enum        []any  `json:"enum"`
}

func (p *elicitPrompt) answer(ctx context.Context, req *mcptool.ElicitRequest) (*mcptool.ElicitResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !promptIsTerminal() {
		fmt.Fprintf(p.out, "actoviq: MCP server %s asked for input (%q); there is no terminal to ask on, so it was declined. Run the command on a terminal to answer.\n", req.Server, req.Message)
		return &mcptool.ElicitResult{Action: mcptool.ElicitDecline}, nil
	}
	if p.in == nil {
		p.in = bufio.NewReader(promptIn)
	}
	if req.Mode == "url" {
		fmt.Fprintf(p.out, "MCP server %s asks you to open %s\n  %s\n", req.Server, req.URL, req.Message)
		return p.confirm(ctx, "Done? [y]es, [n]o (decline), [c]ancel: ")
	}
	fmt.Fprintf(p.out, "MCP server %s asks: %s\n", req.Server, req.Message)
	var schema struct {
		Properties map[string]elicitProperty `json:"properties"`
		Required   []string                  `json:"required"`
	}
	if len(req.Schema) > 0 {
		if err := json.Unmarshal(req.Schema, &schema); err != nil {
			return nil, fmt.Errorf("elicitation schema: %w", err)
		}
	}
	res, err := p.confirm(ctx, "Answer? [y]es, [n]o (decline), [c]ancel: ")
	if err != nil || res.Action != mcptool.ElicitAccept {
		return res, err
	}
	names := make([]string, 0, len(schema.Properties))
	for n := range schema.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	res.Content = map[string]any{}
	for _, n := range names {
		prop := schema.Properties[n]
		for {
			label := n
			if prop.Title != "" {
				label = prop.Title + " (" + n + ")"
			}
			if prop.Description != "" {
				label += ", " + prop.Description
			}
			if len(prop.Enum) > 0 {
				label += fmt.Sprintf(", one of %v", prop.Enum)
			}
			if prop.Default != nil {
				label += fmt.Sprintf(" [%v]", prop.Default)
			}
			fmt.Fprintf(p.out, "  %s: ", label)
			line, err := p.line(ctx)
			if err != nil {
				return &mcptool.ElicitResult{Action: mcptool.ElicitCancel}, nil
			}
			if line == "" {
				if prop.Default == nil && slices.Contains(schema.Required, n) {
					fmt.Fprintln(p.out, "  (required)")
					continue
				}
				break // the schema's default, if any, applies
			}
			v, err := parseValue(prop, line)
			if err != nil {
				fmt.Fprintf(p.out, "  (%v)\n", err)
				continue
			}
			res.Content[n] = v
			break
		}
	}
	return res, nil
}

func (p *elicitPrompt) confirm(ctx context.Context, q string) (*mcptool.ElicitResult, error) {
	for {
		fmt.Fprint(p.out, q)
		line, err := p.line(ctx)
		if err != nil {
			return &mcptool.ElicitResult{Action: mcptool.ElicitCancel}, nil
		}
		switch strings.ToLower(line) {
		case "y", "yes", "":
			return &mcptool.ElicitResult{Action: mcptool.ElicitAccept}, nil
		case "n", "no":
			return &mcptool.ElicitResult{Action: mcptool.ElicitDecline}, nil
		case "c", "cancel":
			return &mcptool.ElicitResult{Action: mcptool.ElicitCancel}, nil
		}
	}
}

// line reads one line; the call's end or EOF is an error.
func (p *elicitPrompt) line(ctx context.Context) (string, error) {
	type result struct {
		s   string
		err error
	}
	ch := make(chan result, 1)
	go func() {
		s, err := p.in.ReadString('\n')
		if err == io.EOF && s != "" {
			err = nil
		}
		ch <- result{strings.TrimSpace(s), err}
	}()
	select {
	case r := <-ch:
		return r.s, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func parseValue(prop elicitProperty, s string) (any, error) {
	var v any
	switch prop.Type {
	case "integer":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("want a whole number")
		}
		v = n
	case "number":
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("want a number")
		}
		v = f
	case "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			v = true
		case "n", "no", "false":
			v = false
		default:
			return nil, fmt.Errorf("want yes or no")
		}
	default:
		v = s
	}
	if len(prop.Enum) > 0 && !slices.ContainsFunc(prop.Enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
		return nil, fmt.Errorf("want one of %v", prop.Enum)
	}
	return v, nil
}

// callHoldsTask checks that the call of the run recorded the MCP task
// (a tool.handle event of kind mcp.task naming the server and the task
// id); otherwise a usage error says which tasks it holds, if any.
func callHoldsTask(ctx context.Context, rt *actoviq.Runtime, runID, callID, server, taskID string) error {
	evs, err := rt.Events(ctx, runID, nil)
	if err != nil {
		return err
	}
	var held []string
	for _, ev := range evs {
		if ev.Type != actoviq.EvToolHandle {
			continue
		}
		var h actoviq.ToolHandleData
		if json.Unmarshal(ev.Data, &h) != nil || h.CallID != callID || h.Kind != mcptool.HandleTask {
			continue
		}
		var th mcptool.TaskHandle
		if json.Unmarshal(h.Data, &th) != nil || th.TaskID == "" {
			continue
		}
		if th.Server == server && th.TaskID == taskID {
			return nil
		}
		if t := th.Server + " " + th.TaskID; !slices.Contains(held, t) {
			held = append(held, t)
		}
	}
	if len(held) == 0 {
		return usageErr("call %q of run %s recorded no MCP task; nothing was sent (without --run and --call the cancel is sent but not recorded)", callID, runID)
	}
	return usageErr("call %q of run %s recorded MCP task(s) %s, not %s on server %s; nothing was sent", callID, runID, strings.Join(held, ", "), taskID, server)
}
