package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

func (e *env) demoCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole story on a temporary SQLite file: approval, a crash mid-payment, reconciliation",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.demo(cmd.Context(), dir)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory for the demo's files (default: a new temporary directory)")
	return cmd
}

// demoChildCmd is the process the demo kills. It is not for people.
func (e *env) demoChildCmd() *cobra.Command {
	var storePath, bankPath, runID string
	cmd := &cobra.Command{
		Use:    "demo-child",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := storesqlite.Open(storePath, nil)
			if err != nil {
				return err
			}
			defer st.Close()
			rt, err := actoviq.New(st, nil)
			if err != nil {
				return err
			}
			defer rt.Close()
			bank := &bankTool{path: bankPath, crash: true, out: e.stdout}
			_, err = rt.ResumeWith(cmd.Context(), demoAgent(bank), runID, nil, newPrinter(e.stdout, e.stderr, false))
			return err
		},
	}
	cmd.Flags().StringVar(&storePath, "store-path", "", "")
	cmd.Flags().StringVar(&bankPath, "bank", "", "")
	cmd.Flags().StringVar(&runID, "run-id", "", "")
	return cmd
}

type demoNarrator struct {
	w    io.Writer
	step int
}

func (n *demoNarrator) step_(title string, lines ...string) {
	n.step++
	fmt.Fprintf(n.w, "\n━━ Step %d: %s\n", n.step, title)
	for _, l := range lines {
		fmt.Fprintf(n.w, "   %s\n", l)
	}
	fmt.Fprintln(n.w)
}

func (n *demoNarrator) say(format string, args ...any) {
	fmt.Fprintf(n.w, "   "+format+"\n", args...)
}

func (e *env) demo(ctx context.Context, dir string) error {
	start := time.Now()
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "actoviq-demo-"); err != nil {
			return &exitError{code: ExitFailed, err: err}
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return usageErr("--dir: %v", err)
	}
	dbPath := filepath.Join(dir, "actoviq.db")
	bankPath := filepath.Join(dir, "bank.jsonl")
	const runID = "demo-run"
	fail := func(format string, args ...any) error {
		return &exitError{code: ExitFailed, err: fmt.Errorf("demo: "+format, args...)}
	}
	n := &demoNarrator{w: e.stdout}
	fmt.Fprintf(e.stdout, "actoviq demo: an agent pays an invoice. Its store is the SQLite file %s;\n", dbPath)
	fmt.Fprintf(e.stdout, "the bank is the file %s, one line per payment, keyed by idempotency key.\n", bankPath)

	open := func() (*actoviq.Runtime, func(), error) {
		st, err := storesqlite.Open(dbPath, nil)
		if err != nil {
			return nil, nil, err
		}
		rt, err := actoviq.New(st, nil)
		if err != nil {
			st.Close()
			return nil, nil, err
		}
		return rt, func() { rt.Close(); st.Close() }, nil
	}
	bank := &bankTool{path: bankPath, out: e.stdout}
	agent := demoAgent(bank)

	// 1. Run until the payment needs approval.
	n.step_("start the run",
		"The model looks the invoice up (a read: it runs at once) and then asks to pay it.",
		"pay_invoice is a side effect, and this agent's policy says side effects need approval,",
		"so the run stops before the payment starts. Nothing has been paid.")
	rt, done, err := open()
	if err != nil {
		return fail("%v", err)
	}
	p := newPrinter(e.stdout, e.stderr, false)
	res, err := rt.Run(ctx, agent, &actoviq.Input{RunID: runID, Items: []item.Item{item.UserText("Please pay invoice INV-42.")}}, p)
	p.stop()
	p.newline()
	if err != nil {
		done()
		return fail("run: %v", err)
	}
	if res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 || res.Interruptions[0].Kind != actoviq.InterruptApproval {
		done()
		return fail("expected an approval interruption, got %s", res.Status)
	}
	in := res.Interruptions[0]
	n.say("run %s: %s, waiting for approval of call %s:", runID, res.Status, in.CallID)
	printInterruption(indent(e.stdout), &in)

	// 2. Approve.
	n.step_("approve the payment",
		"The approval is recorded durably, with who, when and why, and bound to these exact",
		"arguments and this policy version. (By hand: actoviq approve "+runID+" "+in.CallID+" --store sqlite:"+dbPath+")")
	if err := rt.Decide(ctx, runID, actoviq.Decision{CallID: in.CallID, Kind: actoviq.DecideApprove, By: "demo-operator", Reason: "invoice INV-42 checked"}); err != nil {
		done()
		return fail("approve: %v", err)
	}
	n.say("approved by demo-operator")
	done()

	// 3. Resume in a child process and kill it in the middle of the payment.
	n.step_("resume in another process, and kill it mid-payment",
		"A child process resumes the run. The ledger records `started` (and that write returns)",
		"before the bank is called. The bank takes the payment; then, before the child can record",
		"the result, we SIGKILL it. The payment happened, but the ledger cannot know that.")
	exe, err := e.executable()
	if err != nil {
		return fail("find my own executable: %v", err)
	}
	if err := killChildMidPayment(ctx, e.stdout, exe, dbPath, bankPath, runID); err != nil {
		return fail("%v", err)
	}
	rt, done, err = open()
	if err != nil {
		return fail("%v", err)
	}
	defer done()
	info, err := rt.Get(ctx, runID)
	if err != nil {
		return fail("%v", err)
	}
	pay := ledgerEntry(info, in.CallID)
	if pay == nil || pay.State != store.LedgerStarted {
		return fail("expected the payment to be `started` after the kill")
	}
	entries, _ := bank.entries()
	n.say("ledger: call %s is %s (attempt %d, key %s, holder %s, now dead)", pay.CallID, pay.State, pay.Attempt, pay.IdempotencyKey, pay.Holder)
	n.say("bank: %d payment(s)", len(entries))

	// 4. Resume: the recovery rules find a started side effect.
	n.step_("resume after the crash",
		"A started side effect is never run again on the runtime's own initiative. pay_invoice",
		"has a probe, so the runtime asks the bank about the idempotency key first. The bank",
		"has the payment, so the call is settled as committed, with the probe's evidence, and",
		"the run goes on. (Without a probe, or with an unsure answer, the run would stop with a",
		"reconciliation interruption for a person: actoviq resolve ... --committed / --failed / --reexecute.)")
	p = newPrinter(e.stdout, e.stderr, false)
	res, err = rt.ResumeWith(ctx, agent, runID, nil, p)
	p.stop()
	p.newline()
	if err != nil {
		return fail("resume: %v", err)
	}
	if res.Status != actoviq.StatusCompleted {
		return fail("expected the run to complete, got %s", res.Status)
	}

	// 5. The evidence.
	info, err = rt.Get(ctx, runID)
	if err != nil {
		return fail("%v", err)
	}
	entries, _ = bank.entries()
	pay = ledgerEntry(info, in.CallID)
	n.step_("the result",
		fmt.Sprintf("The run completed. The bank has %d payment; the ledger has the payment committed at", len(entries)),
		fmt.Sprintf("attempt %d, settled by %s. No payment was made twice.", pay.Attempt, pay.Resolution.By))
	showRun(&env{stdout: indent(e.stdout)}, info)
	if len(entries) != 1 || pay.Attempt != 1 || pay.State != store.LedgerCommitted {
		return fail("expected exactly one payment, committed at attempt 1")
	}

	s := "sqlite:" + dbPath
	script := filepath.Join(dir, "script.json")
	if err := os.WriteFile(script, []byte(demoScript), 0o644); err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(e.stdout, "\nDone in %s. To do the same by hand (files kept in %s):\n\n", time.Since(start).Round(10*time.Millisecond), dir)
	fmt.Fprintf(e.stdout, "  actoviq runs list --store %s\n", s)
	fmt.Fprintf(e.stdout, "  actoviq runs show %s --store %s\n", runID, s)
	fmt.Fprintf(e.stdout, "  actoviq run --store %s --run-id by-hand --model scripted:%s --demo-bank %s \"Please pay invoice INV-42.\"   # exits 3\n", s, script, bankPath)
	fmt.Fprintf(e.stdout, "  actoviq approve by-hand call_pay --store %s --note \"checked\"\n", s)
	fmt.Fprintf(e.stdout, "  actoviq resume by-hand --store %s   # exits 0\n", s)
	fmt.Fprintf(e.stdout, "  # after a crash mid-call, with no probe: actoviq resolve RUN CALL --store %s --committed --result '\"payment pay_001\"'\n", s)
	fmt.Fprintf(e.stdout, "\nRemove the files with: rm -rf %s\n", dir)
	return nil
}

func ledgerEntry(info *actoviq.RunInfo, callID string) *store.LedgerEntry {
	for _, en := range info.Ledger {
		if en.CallID == callID {
			return en
		}
	}
	return nil
}

// killChildMidPayment runs the demo child and SIGKILLs it once the bank has
// taken the payment.
func killChildMidPayment(ctx context.Context, w io.Writer, exe, dbPath, bankPath, runID string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "demo-child", "--store-path", dbPath, "--bank", bankPath, "--run-id", runID)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the child: %w", err)
	}
	fmt.Fprintf(w, "   child process %d started\n", cmd.Process.Pid)
	sc := bufio.NewScanner(out)
	seen := false
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintf(w, "   [child] %s\n", line)
		if strings.Contains(line, demoPaymentMarker) {
			seen = true
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill the child: %w", err)
	}
	_ = cmd.Wait()
	if !seen {
		return errors.New("the child ended before it paid")
	}
	fmt.Fprintf(w, "   SIGKILL sent to process %d: it is gone\n", cmd.Process.Pid)
	return nil
}

// indent prefixes every line written to w.
func indent(w io.Writer) io.Writer { return &indenter{w: w, bol: true} }

type indenter struct {
	w   io.Writer
	bol bool
}

func (i *indenter) Write(b []byte) (int, error) {
	for _, c := range b {
		if i.bol {
			if _, err := io.WriteString(i.w, "   "); err != nil {
				return 0, err
			}
		}
		if _, err := i.w.Write([]byte{c}); err != nil {
			return 0, err
		}
		i.bol = c == '\n'
	}
	return len(b), nil
}
