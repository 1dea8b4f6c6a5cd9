package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"

	"github.com/spf13/cobra"

	"github.com/actoviq/actoviq-go/tool"
)

// Exit codes.
const (
	ExitCompleted   = 0
	ExitFailed      = 1
	ExitUsage       = 2
	ExitInterrupted = 3
	// ExitStopped: a signal stopped the command before the run ended; the
	// run was not ended (a shutdown is not a cancellation) and
	// actoviq resume RUN continues it. (ExitHeld, 4, is in resume.go.)
	ExitStopped = 5
)

// exitError carries an exit code with its message.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErr is a usage or configuration error (exit 2).
func usageErr(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// env gives commands their surroundings.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	// executable is the path of this program, for the demo's child.
	executable func() (string, error)
	// extraTools are added to every agent (tests).
	extraTools []tool.Tool
}

// Main runs the command line and returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return (&env{stdout: stdout, stderr: stderr, getenv: os.Getenv, executable: os.Executable}).main(ctx, args)
}

func (e *env) main(ctx context.Context, args []string) int {
	stdout, stderr := e.stdout, e.stderr
	root := e.rootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitCompleted
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.code != ExitInterrupted && ee.code != ExitCompleted && !silent(ee.err) {
			fmt.Fprintln(stderr, prefixed(ee.err))
		}
		return ee.code
	}
	// cobra's own errors: unknown commands and flags, bad arguments.
	fmt.Fprint(stderr, cobraUsageError(cmd, err))
	return ExitUsage
}

// prefixed is the one-line message for an error.
func prefixed(err error) string {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	if strings.HasPrefix(msg, "actoviq: ") {
		return msg
	}
	return "actoviq: " + msg
}

type silentError struct{ error }

func silent(err error) bool {
	var s silentError
	return errors.As(err, &s)
}

func (e *env) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "actoviq",
		Short: "Run LLM agents whose tool calls have real consequences",
		Long: "actoviq runs agents through a durable pending-tool ledger: side effects of unknown outcome are never re-run without a decision.\n\n" +
			"Start with: actoviq demo. Exit codes: 0 completed, 3 interrupted (a decision is needed), 1 failed or cancelled,\n" +
			"2 usage or configuration error, 4 another live process drives the run, 5 stopped by a signal (the run is\n" +
			"not ended: actoviq resume RUN continues it). Shell completion, with run and call ids read from the store that --store names:\n" +
			"  source <(actoviq completion bash)     # or: actoviq completion zsh|fish --help",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.Version = versionText()
	root.SetVersionTemplate("{{.Version}}")
	root.AddCommand(e.versionCmd())
	root.AddCommand(e.mcpCmd())
	root.AddCommand(e.runCmd(), e.resumeCmd(), e.runsCmd(), e.approveCmd(), e.rejectCmd(), e.resolveCmd(),
		e.demoCmd(), e.demoChildCmd(), e.consoleCmd(), e.workerCmd(), e.auditCmd())
	return root
}

func defaultUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if n := os.Getenv("USER"); n != "" {
		return n
	}
	return "operator"
}
