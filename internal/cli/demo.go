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
	var o demoOpts
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole story on a temporary SQLite file: approval, a crash mid-payment, reconciliation",
		Long: "demo runs an agent that pays an invoice through a file-backed bank, on a new SQLite store:\n" +
			"the payment waits for approval; a child process resumes the run and is SIGKILLed mid-payment;\n" +
			"the next resume settles the call (with the bank's probe, or by a person's decision) and the\n" +
			"run completes with one payment. It ends with the commands to do the same by hand.\n\n" +
			"  --crash after-pay   the child dies after the bank took the payment (the default)\n" +
			"  --crash before-pay  the child dies before paying: the probe finds nothing, which proves\n" +
			"                      nothing, so a person decides (here: re-execute with the same key)\n" +
			"  --no-probe          the bank has no probe: every crash mid-payment needs a person",
		Example: "  actoviq demo\n  actoviq demo --crash before-pay\n  actoviq demo --no-probe --dir ./demo-files",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkCrash("--crash", o.crash); err != nil {
				return err
			}
			return e.demo(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.dir, "dir", "", "directory for the demo's files (default: a new temporary directory)")
	cmd.Flags().StringVar(&o.crash, "crash", crashAfterPay, "where the child process dies: after-pay or before-pay")
	cmd.Flags().BoolVar(&o.noProbe, "no-probe", false, "the bank has no probe, so a person settles the crashed call")
	return cmd
}

type demoOpts struct {
	dir, crash string
	noProbe    bool
}

// demoChildCmd is the process the demo kills. It is not for people.
func (e *env) demoChildCmd() *cobra.Command {
	var storePath, bankPath, runID, crash string
	var noProbe bool
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
			bank := &bankTool{path: bankPath, crash: crash, out: e.stdout}
			_, err = rt.Resume(cmd.Context(), demoAgent(bank, noProbe), runID, &actoviq.ResumeOptions{Sinks: []actoviq.EventSink{newPrinter(e.stdout, e.stderr, false)}})
			return err
		},
	}
	cmd.Flags().StringVar(&storePath, "store-path", "", "")
	cmd.Flags().StringVar(&bankPath, "bank", "", "")
	cmd.Flags().StringVar(&runID, "run-id", "", "")
	cmd.Flags().StringVar(&crash, "crash", crashAfterPay, "")
	cmd.Flags().BoolVar(&noProbe, "no-probe", false, "")
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

// selfCommand is how a person runs this program again from here: the
// name on the PATH when that is this program, "go run ./cmd/actoviq" when
// it was built by go run (its binary lives in a temporary build
// directory), else its absolute path.
func (e *env) selfCommand() string {
	exe, err := e.executable()
	if err != nil {
		return "actoviq"
	}
	if strings.Contains(filepath.ToSlash(exe), "/go-build") {
		return "go run ./cmd/actoviq"
	}
	if p, err := exec.LookPath("actoviq"); err == nil {
		a, errA := os.Stat(p)
		b, errB := os.Stat(exe)
		if errA == nil && errB == nil && os.SameFile(a, b) {
			return "actoviq"
		}
	}
	return shellQuote(exe)
}

func (e *env) demo(ctx context.Context, o demoOpts) error {
	start := time.Now()
	dir := o.dir
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
	if o.noProbe {
		fmt.Fprintln(e.stdout, "This time the bank has no probe: nothing but a person can say what happened to a payment.")
	}

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
	agent := demoAgent(bank, o.noProbe)
	self := e.selfCommand()
	s := "sqlite:" + dbPath
	sq := shellQuote(s)

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
		"arguments and this policy version. (By hand: "+self+" approve "+runID+" "+in.CallID+" --store "+sq+")")
	if err := rt.Decide(ctx, runID, actoviq.Decision{CallID: in.CallID, Kind: actoviq.DecideApprove, By: "demo-operator", Reason: "invoice INV-42 checked"}); err != nil {
		done()
		return fail("approve: %v", err)
	}
	n.say("approved by demo-operator")
	done()

	// 3. Resume in a child process that dies in the middle of the payment.
	if o.crash == crashBeforePay {
		n.step_("resume in another process, and kill it just before the payment",
			"A child process resumes the run. The ledger records `started` (and that write returns)",
			"before the bank is called; then, before the bank sees anything, the child is SIGKILLed.",
			"Nothing was paid, but the ledger cannot know that: it only knows the call started.")
	} else {
		n.step_("resume in another process, and kill it mid-payment",
			"A child process resumes the run. The ledger records `started` (and that write returns)",
			"before the bank is called. The bank takes the payment; then, before the child can record",
			"the result, it is SIGKILLed. The payment happened, but the ledger cannot know that.")
	}
	exe, err := e.executable()
	if err != nil {
		return fail("find my own executable: %v", err)
	}
	if err := killChildMidPayment(ctx, e.stdout, exe, dbPath, bankPath, runID, o); err != nil {
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
	switch {
	case o.noProbe:
		n.step_("resume after the crash",
			"A started side effect is never run again on the runtime's own initiative. This bank has",
			"no probe, so nothing can tell the runtime whether the payment happened: the run stops",
			"with a reconciliation interruption, and a person decides.")
	case o.crash == crashBeforePay:
		n.step_("resume after the crash",
			"A started side effect is never run again on the runtime's own initiative. pay_invoice",
			"has a probe, so the runtime asks the bank about the idempotency key first. The bank has",
			"no such payment, so the probe answers not_executed. That is not proof: a request sent",
			"just before the crash may still be in flight and land later. So the run stops with a",
			"reconciliation interruption, and a person decides.")
	default:
		n.step_("resume after the crash",
			"A started side effect is never run again on the runtime's own initiative. pay_invoice",
			"has a probe, so the runtime asks the bank about the idempotency key first. The bank",
			"has the payment, so the call is settled as committed, with the probe's evidence, and",
			"the run goes on. (With no probe (demo --no-probe), or a probe that finds nothing (demo",
			"--crash before-pay), the run would stop with a reconciliation interruption for a person.)")
	}
	p = newPrinter(e.stdout, e.stderr, false)
	res, err = rt.Resume(ctx, agent, runID, &actoviq.ResumeOptions{Sinks: []actoviq.EventSink{p}})
	p.stop()
	p.newline()
	if err != nil {
		return fail("resume: %v", err)
	}
	if res.Status == actoviq.StatusInterrupted {
		if len(res.Interruptions) != 1 || res.Interruptions[0].Kind != actoviq.InterruptReconciliation {
			return fail("expected one reconciliation interruption, got %d", len(res.Interruptions))
		}
		rin := res.Interruptions[0]
		n.say("run %s: interrupted, call %s needs a decision:", runID, rin.CallID)
		printInterruption(indent(e.stdout), &rin)
		d := actoviq.Decision{CallID: rin.CallID, By: "demo-operator"}
		var by string
		if e, ok := bank.find(rin.IdempotencyKey); ok {
			d.Kind, d.Result, d.Reason = actoviq.DecideCommitted, "payment "+e.Payment, "found "+e.Payment+" in the bank under the key"
			by = self + " resolve " + runID + " " + rin.CallID + " --committed --result '\"payment " + e.Payment + "\"' --store " + sq
			n.step_("a person decides: it happened",
				"The operator looks the key up in the bank and finds payment "+e.Payment+". They record",
				"the call as committed with that result; it is not run again.",
				"(By hand: "+by+")")
		} else {
			d.Kind, d.Reason = actoviq.DecideReexecute, "the bank has no payment with this key, and it dedupes on the key"
			by = self + " resolve " + runID + " " + rin.CallID + " --reexecute --store " + sq
			n.step_("a person decides: run it again, with the same key",
				"The operator finds no payment with this key in the bank. They could record it as failed",
				"(the model would be told); since the bank dedupes on the key, they choose to re-execute:",
				"attempt 2 sends the same key, so a request still in flight could not pay twice.",
				"(By hand: "+by+")")
		}
		if err := rt.Decide(ctx, runID, d); err != nil {
			return fail("decide: %v", err)
		}
		n.say("recorded %s by demo-operator; resuming", d.Kind)
		p = newPrinter(e.stdout, e.stderr, false)
		res, err = rt.Resume(ctx, agent, runID, &actoviq.ResumeOptions{Sinks: []actoviq.EventSink{p}})
		p.stop()
		p.newline()
		if err != nil {
			return fail("resume: %v", err)
		}
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
		fmt.Sprintf("The run completed. The bank has %d payment; the ledger has the payment %s at", len(entries), pay.State),
		fmt.Sprintf("attempt %d (outcome: %s). No payment was made twice.", pay.Attempt, outcome(pay)))
	showRun(&env{stdout: indent(e.stdout)}, info, nil, false)
	if len(entries) != 1 || pay.State != store.LedgerCommitted {
		return fail("expected exactly one payment, committed")
	}
	if err := e.demoHTTP(ctx, n, open); err != nil {
		return fail("HTTP bank: %v", err)
	}

	script := filepath.Join(dir, "script.json")
	if err := os.WriteFile(script, []byte(demoScript), 0o644); err != nil {
		return fail("%v", err)
	}
	bq, scq := shellQuote(bankPath), shellQuote("scripted:"+script)
	fmt.Fprintf(e.stdout, "\nDone in %s. To do the same by hand (files kept in %s):\n\n", time.Since(start).Round(10*time.Millisecond), dir)
	if strings.HasPrefix(self, "go run ") {
		fmt.Fprintf(e.stdout, "  # from the checkout's root; or install the command first (go install ./cmd/actoviq) and type actoviq\n")
	}
	fmt.Fprintf(e.stdout, "  %s runs list --store %s\n", self, sq)
	fmt.Fprintf(e.stdout, "  %s runs show %s --store %s\n", self, runID, sq)
	fmt.Fprintf(e.stdout, "  %s run --store %s --run-id by-hand --model %s --demo-bank %s \"Please pay invoice INV-42.\"   # exits 3\n", self, sq, scq, bq)
	fmt.Fprintf(e.stdout, "  %s approve by-hand call_pay --store %s --note \"checked\"\n", self, sq)
	fmt.Fprintf(e.stdout, "  %s resume by-hand --store %s   # exits 0\n", self, sq)
	fmt.Fprintf(e.stdout, "\nA crash by hand (the process SIGKILLs itself before the bank is called):\n\n")
	fmt.Fprintf(e.stdout, "  %s run --store %s --run-id crash-1 --approve none --model %s --demo-bank %s --demo-crash before-pay \"Please pay invoice INV-42.\"\n", self, sq, scq, bq)
	fmt.Fprintf(e.stdout, "  %s resume crash-1 --store %s   # exits 3: the probe found nothing, which proves nothing\n", self, sq)
	fmt.Fprintf(e.stdout, "  %s resolve crash-1 call_pay --reexecute --store %s   # or --failed --message TEXT\n", self, sq)
	fmt.Fprintf(e.stdout, "  %s resume crash-1 --store %s   # exits 0, one payment\n", self, sq)
	fmt.Fprintf(e.stdout, "\nRemove the files with: rm -rf %s\n", shellQuote(dir))
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

// killChildMidPayment runs the demo child, which SIGKILLs itself at its
// crash point; the demo SIGKILLs it too as soon as it says so, in case.
func killChildMidPayment(ctx context.Context, w io.Writer, exe, dbPath, bankPath, runID string, o demoOpts) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	args := []string{"demo-child", "--store-path", dbPath, "--bank", bankPath, "--run-id", runID, "--crash", o.crash}
	if o.noProbe {
		args = append(args, "--no-probe")
	}
	cmd := exec.CommandContext(ctx, exe, args...)
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
		if strings.Contains(line, demoHangMarker) {
			seen = true
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill the child: %w", err)
	}
	_, _ = io.Copy(io.Discard, out)
	_ = cmd.Wait()
	if !seen {
		return errors.New("the child ended before it reached the bank")
	}
	fmt.Fprintf(w, "   process %d was SIGKILLed: it is gone\n", cmd.Process.Pid)
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
