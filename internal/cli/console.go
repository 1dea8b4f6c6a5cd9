package cli

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/console"
)

type consoleFlags struct {
	listen         string
	tokenFile      string
	tokensFile     string
	operator       string
	tlsCert        string
	tlsKey         string
	insecureListen bool
	mcpConfig      string
	resume         string
	hosts          []string
	ops            opsFlags
}

func (e *env) consoleCmd() *cobra.Command {
	c := common{mustExist: true}
	var f consoleFlags
	cmd := &cobra.Command{
		Use:   "console [--store URL] [--tenant T] [--listen 127.0.0.1:8080]",
		Short: "Serve the operator console: the web page where people find and settle what waits for them",
		Long: "console serves the web console and its JSON API (/api/v1/) for one store and tenant.\n\n" +
			"It needs a token: $ACTOVIQ_CONSOLE_TOKEN, or the first line of --token-file. With neither, it makes one\n" +
			"and prints a login URL once. Decisions are recorded under the name given at sign-in, or under --operator.\n\n" +
			"--tokens-file FILE gives each person their own token bound to their name instead: each line is NAME TOKEN\n" +
			"(blank lines and lines starting with # are skipped; a token is at least 16 characters; no name or token twice;\n" +
			"chmod 600 the file). Each decision is then recorded under the name bound to the token that signed in, whatever\n" +
			"name is typed, so an approvals policy's groups and two-person rules hold. It excludes --token-file,\n" +
			"$ACTOVIQ_CONSOLE_TOKEN and --operator.\n\n" +
			"It listens on loopback unless told otherwise; another address needs --tls-cert and --tls-key, or\n" +
			"--insecure-listen (behind a TLS-terminating proxy: the session cookie is Secure, so a browser keeps it\n" +
			"only over https or on localhost).\n\n" +
			"It answers only requests for an IP address, localhost, the --listen host, the names in --tls-cert and\n" +
			"each --host NAME (the name a proxy in front of it serves); any other Host is refused with 421, so that\n" +
			"a web page whose name resolves to this machine (DNS rebinding) cannot reach it.\n\n" +
			"--resume says what the page's Resume button does:\n" +
			"  here   resume the run in this process when it can rebuild the run's agent (the provider's API key in its\n" +
			"         environment, the MCP config as the run remembers it, or --mcp-config); otherwise show the command\n" +
			"  queue  hand the run to the workers' queue (actoviq worker processes of this store and tenant resume it)\n" +
			"  none   only show the actoviq resume command\n\n" +
			"--metrics-listen serves Prometheus metrics (gauges over the store: runs by status, inbox items and the\n" +
			"oldest one's age by kind). --notify-url POSTs a signed JSON item to a webhook for each stalled run it\n" +
			"finds (every --notify-stalled-every) and for what runs resumed here stop for.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return e.console(cmd, &c, &f) },
	}
	c.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:8080", "address to listen on (loopback unless TLS or --insecure-listen)")
	fl.StringVar(&f.tokenFile, "token-file", "", "file whose first line is the console's token (default $ACTOVIQ_CONSOLE_TOKEN, else a new one)")
	fl.StringVar(&f.tokensFile, "tokens-file", "", "file of named tokens, one NAME TOKEN per line: each person signs in with their own (excludes --token-file, --operator)")
	fl.StringVar(&f.operator, "operator", "", "record every decision made with this token under this name (default: the name given at sign-in)")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "TLS certificate file (PEM)")
	fl.StringVar(&f.tlsKey, "tls-key", "", "TLS private key file (PEM)")
	fl.BoolVar(&f.insecureListen, "insecure-listen", false, "allow plain HTTP on a non-loopback address (behind a TLS-terminating proxy)")
	fl.StringVar(&f.mcpConfig, "mcp-config", "", "MCP servers config for the runs this console resumes (default: each run's own)")
	fl.StringVar(&f.resume, "resume", "here", "what Resume does: here, queue (actoviq worker) or none (show the command)")
	fl.StringArrayVar(&f.hosts, "host", nil, "a host name the console is reached by, e.g. the proxy's (repeatable; IP addresses and localhost always work)")
	f.ops.register(cmd, true)
	return cmd
}

// loopback reports whether a listen address stays on this machine.
func loopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// consoleHosts lists the names the console serves: each --host, the
// --listen host when it is a name, and the DNS names of the TLS
// certificate.
func consoleHosts(f *consoleFlags) ([]string, error) {
	var hosts []string
	for _, h := range f.hosts {
		h = strings.TrimSpace(h)
		if h == "" || strings.ContainsAny(h, "/ @") {
			return nil, usageErr("--host %q: want a host name such as console.example.com", h)
		}
		hosts = append(hosts, h)
	}
	if h, _, err := net.SplitHostPort(f.listen); err == nil && h != "" && net.ParseIP(h) == nil {
		hosts = append(hosts, h)
	}
	if f.tlsCert != "" {
		pair, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			return nil, usageErr("--tls-cert %s, --tls-key %s: %v", f.tlsCert, f.tlsKey, err)
		}
		if len(pair.Certificate) > 0 {
			if leaf, err := x509.ParseCertificate(pair.Certificate[0]); err == nil {
				hosts = append(hosts, leaf.DNSNames...)
			}
		}
	}
	return hosts, nil
}

// consoleTokensFile reads --tokens-file: one "NAME TOKEN" per line, blank
// lines and # comments skipped. An error names the line and never
// echoes a token.
func (e *env) consoleTokensFile(path string) ([]console.Token, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErr("--tokens-file: %v", err)
	}
	var toks []console.Token
	names := map[string]int{}
	secrets := map[string]int{}
	for i, line := range strings.Split(string(b), "\n") {
		n := i + 1
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, usageErr("--tokens-file %s line %d: want NAME TOKEN (two fields separated by spaces), found %d fields", path, n, len(fields))
		}
		name, secret := fields[0], fields[1]
		switch {
		case len(name) > 64:
			return nil, usageErr("--tokens-file %s line %d: the name is longer than 64 bytes", path, n)
		case strings.EqualFold(name, "console"):
			return nil, usageErr(`--tokens-file %s line %d: "console" is not a person: give the operator's own name`, path, n)
		case strings.IndexFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
			return nil, usageErr("--tokens-file %s line %d: the name has non-printable characters", path, n)
		case len(secret) < 16:
			return nil, usageErr("--tokens-file %s line %d: %s's token is shorter than 16 characters", path, n, name)
		}
		// Names are compared as the approvals policy compares approvers
		// (without case), so two lines cannot pass as two people.
		key := strings.ToLower(name)
		if first, ok := names[key]; ok {
			return nil, usageErr("--tokens-file %s line %d: the name %s is already on line %d: one token per person", path, n, name, first)
		}
		if first, ok := secrets[secret]; ok {
			return nil, usageErr("--tokens-file %s line %d: %s's token is the same as line %d's: each person needs their own token", path, n, name, first)
		}
		names[key], secrets[secret] = n, n
		toks = append(toks, console.Token{Secret: secret, Operator: name})
	}
	if len(toks) == 0 {
		return nil, usageErr("--tokens-file %s: no NAME TOKEN line", path)
	}
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		fmt.Fprintf(e.stderr, "actoviq: warning: %s can be read by other users (mode %v); chmod 600 it\n", path, st.Mode().Perm())
	}
	return toks, nil
}

func (e *env) consoleToken(f *consoleFlags) (secret string, generated bool, err error) {
	if f.tokenFile != "" {
		b, err := os.ReadFile(f.tokenFile)
		if err != nil {
			return "", false, usageErr("--token-file: %v", err)
		}
		secret, _, _ = strings.Cut(string(b), "\n")
		secret = strings.TrimSpace(secret)
		if len(secret) < 16 {
			return "", false, usageErr("--token-file %s: the token on its first line is shorter than 16 characters", f.tokenFile)
		}
		if st, err := os.Stat(f.tokenFile); err == nil && st.Mode().Perm()&0o077 != 0 {
			fmt.Fprintf(e.stderr, "actoviq: warning: %s can be read by other users (mode %v); chmod 600 it\n", f.tokenFile, st.Mode().Perm())
		}
		return secret, false, nil
	}
	if v := strings.TrimSpace(e.getenv("ACTOVIQ_CONSOLE_TOKEN")); v != "" {
		if len(v) < 16 {
			return "", false, usageErr("ACTOVIQ_CONSOLE_TOKEN is shorter than 16 characters")
		}
		return v, false, nil
	}
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", false, err
	}
	return hex.EncodeToString(b[:]), true, nil
}

func (e *env) console(cmd *cobra.Command, c *common, f *consoleFlags) error {
	ctx := cmd.Context()
	if err := checkStoreURL(e.storeURL(c)); err != nil {
		return err
	}
	local, err := loopback(f.listen)
	if err != nil {
		return usageErr("--listen %q: want HOST:PORT (%v)", f.listen, err)
	}
	switch f.resume {
	case "here", "queue", "none":
	default:
		return usageErr("--resume %q: want here, queue or none", f.resume)
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return usageErr("--tls-cert and --tls-key go together")
	}
	useTLS := f.tlsCert != ""
	if !local && !useTLS && !f.insecureListen {
		return usageErr("--listen %s is not a loopback address: give --tls-cert and --tls-key, or --insecure-listen behind a TLS-terminating proxy", f.listen)
	}
	var (
		tokens    []console.Token
		secret    string
		generated bool
	)
	if f.tokensFile != "" {
		switch {
		case f.tokenFile != "":
			return usageErr("--tokens-file and --token-file go apart: --tokens-file gives each person a named token, --token-file one shared token")
		case strings.TrimSpace(e.getenv("ACTOVIQ_CONSOLE_TOKEN")) != "":
			return usageErr("--tokens-file and $ACTOVIQ_CONSOLE_TOKEN go apart: unset ACTOVIQ_CONSOLE_TOKEN (a shared token would let its holder sign in under any name)")
		case f.operator != "":
			return usageErr("--tokens-file and --operator go apart: the file binds each token to its own name")
		}
		if tokens, err = e.consoleTokensFile(f.tokensFile); err != nil {
			return err
		}
	} else {
		if secret, generated, err = e.consoleToken(f); err != nil {
			return err
		}
		tokens = []console.Token{{Secret: secret, Operator: f.operator}}
	}
	if f.operator == "" && f.tokensFile == "" {
		if pol, err := e.approvers(c); err != nil {
			return err
		} else if pol != nil {
			// The policy names people, but a token bound to no name lets
			// whoever holds it sign in under any name: a refused person
			// could type an allowed one, and one person could be both
			// approvers of a two-person rule.
			fmt.Fprintln(e.stderr, "actoviq: warning: an approvals policy is in effect, but the console's token is bound to no name: "+
				"whoever holds it may sign in under any name the policy allows (and be both approvers of a two-person rule). "+
				"Give each approver their own token bound to their name with --tokens-file FILE (lines NAME TOKEN).")
		}
	}
	op, err := e.newOps(&f.ops, nil)
	if err != nil {
		return err
	}
	defer op.close()
	rt, done, err := e.runtime(ctx, c, op.sinks...)
	if err != nil {
		return err
	}
	defer done()
	op.start(ctx, rt)
	hosts, err := consoleHosts(f)
	if err != nil {
		return err
	}
	cfg := &console.Config{
		Tokens: tokens,
		Hosts:  hosts,
		// actoviq resume rebuilds only the runs this command started; a
		// run a Go program started is resumed by that program (or a
		// worker that serves its agent, which the console offers itself).
		ResumeCommand: func(runID string) string {
			info, err := rt.Get(ctx, runID)
			if err == nil && !startedByCLI(info) {
				return ""
			}
			return "actoviq resume " + shellQuote(runID) + storeFlags(c)
		},
	}
	switch f.resume {
	case "here":
		cfg.Resume = func(ctx context.Context, runID string) (*actoviq.RunResult, error) {
			return e.consoleResume(ctx, rt, f, runID)
		}
		cfg.CanResume = func(ctx context.Context, info *actoviq.RunInfo) error {
			rc, err := configFromMeta(info.ID, info.Meta)
			if err != nil {
				return errors.New("it was not started by the actoviq command")
			}
			return e.providerReady(rc)
		}
	case "queue":
		// The console offers the queue for a run whose agent a worker
		// serves, and otherwise says who resumes it.
	}
	if f.mcpConfig != "" {
		// "Cancel the task" on the run page: tasks/cancel through these
		// servers.
		src, _, err := e.mcpSource(&mcpFlags{config: f.mcpConfig}, nil)
		if err != nil {
			return err
		}
		defer src.Close()
		cfg.CancelTask = src.CancelTask
	}
	con, err := console.New(rt, cfg)
	if err != nil {
		return usageErr("%v", err)
	}
	defer con.Close()

	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return usageErr("--listen %s: %v", f.listen, err)
	}
	scheme := "http"
	if useTLS {
		scheme = "https"
	}
	base := scheme + "://" + ln.Addr().String()
	if !local && !useTLS {
		fmt.Fprintf(e.stderr, "actoviq: warning: serving plain HTTP on %s, a non-loopback address: tokens and decisions cross the network in clear unless a TLS proxy is in front\n", ln.Addr())
	}
	// The banner goes out in one write: whoever reads the address line
	// (a person, a supervisor, a test) has the rest of it too.
	var banner strings.Builder
	fmt.Fprintf(&banner, "actoviq console for tenant %s of %s on %s\n", rt.Tenant(), redactURL(e.storeURL(c)), base)
	if generated {
		fmt.Fprintf(&banner, "sign in at %s/login#token=%s\n(the token is shown only now; set ACTOVIQ_CONSOLE_TOKEN or --token-file to keep one)\n", base, secret)
	} else if f.tokensFile != "" {
		fmt.Fprintf(&banner, "sign in at %s/login with your own token from %s (%d named tokens)\n", base, f.tokensFile, len(tokens))
	} else {
		fmt.Fprintf(&banner, "sign in at %s/login with the console's token\n", base)
	}
	switch f.resume {
	case "none":
		banner.WriteString("runs are not resumed here (--resume none): the page shows the resume command\n")
	case "queue":
		banner.WriteString("resume hands runs to the workers' queue: start one with actoviq worker" + storeFlags(c) + "\n")
	}
	io.WriteString(e.stdout, banner.String())

	srv := &http.Server{Handler: con, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: nil, BaseContext: func(net.Listener) context.Context { return ctx }}
	errc := make(chan error, 1)
	go func() {
		if useTLS {
			errc <- srv.ServeTLS(ln, f.tlsCert, f.tlsKey)
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return &exitError{code: ExitFailed, err: fmt.Errorf("console: %w", err)}
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	// Streams end with the request contexts (BaseContext is ctx).
	_ = srv.Shutdown(sctx)
	fmt.Fprintln(e.stdout, "console stopped")
	return nil
}

// consoleResume rebuilds a run's agent as `actoviq resume` does and drives
// it. A run the console cannot rebuild answers console.ErrCannotResume, so
// the page shows the command instead.
func (e *env) consoleResume(ctx context.Context, rt *actoviq.Runtime, f *consoleFlags, runID string) (*actoviq.RunResult, error) {
	info, err := rt.Get(ctx, runID)
	if err != nil {
		return nil, err
	}
	cfg, err := configFromMeta(info.ID, info.Meta)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, console.ErrCannotResume)
	}
	if f.mcpConfig != "" {
		cfg.MCPConfig = absPath(f.mcpConfig)
	}
	if err := e.providerReady(cfg); err != nil {
		return nil, fmt.Errorf("%v: %w", err, console.ErrCannotResume)
	}
	agent, closer, err := e.agent(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, console.ErrCannotResume)
	}
	defer closer.Close()
	return rt.Resume(ctx, agent, info.ID, nil)
}

// providerReady says whether the provider's key is in this environment
// (an OpenAI-compatible server reached through a base URL may need none).
func (e *env) providerReady(c *runConfig) error {
	switch c.Provider {
	case "openai", "openai-responses":
		if e.getenv("OPENAI_API_KEY") == "" && c.BaseURL == "" && e.getenv("OPENAI_BASE_URL") == "" {
			return errors.New("OPENAI_API_KEY is not set in the console's environment")
		}
	case "anthropic":
		if e.getenv("ANTHROPIC_API_KEY") == "" {
			return errors.New("ANTHROPIC_API_KEY is not set in the console's environment")
		}
	}
	return nil
}
