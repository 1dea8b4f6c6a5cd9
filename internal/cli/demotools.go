package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/tool"
)

// The demo's world: an invoice lookup (a read) and a bank whose payments
// (a side effect) are lines in a file, keyed by the idempotency key.

type invoiceQuery struct {
	Invoice string `json:"invoice" jsonschema:"the invoice number"`
}

type invoice struct {
	Invoice   string `json:"invoice"`
	Payee     string `json:"payee"`
	AmountEUR int    `json:"amount_eur"`
}

func lookupInvoiceTool() tool.Tool {
	return tool.Func(tool.Spec{Name: "lookup_invoice", Description: "Read an invoice", Effect: tool.Read},
		func(ctx context.Context, q invoiceQuery) (invoice, error) {
			return invoice{Invoice: q.Invoice, Payee: "ACME Ltd", AmountEUR: 1250}, nil
		})
}

// bankTool pays invoices into a file-backed bank and can probe it.
type bankTool struct {
	path string
	// crash is "before-pay" or "after-pay": the process that runs the
	// tool SIGKILLs itself at that point, as a crash would, so that the
	// demo, a test or a person can resume after it. Empty means no crash.
	crash string
	// delay is slept before and after the payment (ACTOVIQ_DEMO_BANK_DELAY),
	// so that a kill campaign's SIGKILLs land inside calls.
	delay time.Duration
	out   io.Writer
	mu    sync.Mutex
}

// Crash points of the demo bank (run --demo-crash, demo --crash).
const (
	crashBeforePay = "before-pay"
	crashAfterPay  = "after-pay"
)

func checkCrash(flag, v string) error {
	switch v {
	case "", crashBeforePay, crashAfterPay:
		return nil
	}
	return usageErr("%s %q: want before-pay or after-pay", flag, v)
}

// demoHangMarker starts the line the bank prints just before its process
// kills itself.
const demoHangMarker = "DEMO: the bank crashes"

// die prints the marker and SIGKILLs this process: nothing after this
// point is recorded, exactly as if the machine had died.
func (b *bankTool) die(when string) {
	fmt.Fprintf(b.out, "%s %s (process %d SIGKILLs itself now)\n", demoHangMarker, when, os.Getpid())
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill()
	}
	select {} // the kill is on its way
}

// noProbeBank is the bank without its probe: after a crash, only a person
// can say what happened.
type noProbeBank struct{ b *bankTool }

func (n noProbeBank) Spec() tool.Spec { return n.b.Spec() }
func (n noProbeBank) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	return n.b.Call(ctx, args)
}

// demoTools are the demo's tools: the invoice lookup and the bank, with or
// without its probe.
func demoTools(bank *bankTool, noProbe bool) []tool.Tool {
	if noProbe {
		return []tool.Tool{lookupInvoiceTool(), noProbeBank{bank}}
	}
	return []tool.Tool{lookupInvoiceTool(), bank}
}

func (b *bankTool) Spec() tool.Spec {
	return tool.Spec{Name: "pay_invoice", Description: "Pay an invoice through the bank", Effect: tool.SideEffect,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"invoice":{"type":"string"},"payee":{"type":"string"},"amount_eur":{"type":"integer","minimum":1}},"required":["invoice","payee","amount_eur"],"additionalProperties":false}`)}
}

type bankEntry struct {
	Key     string  `json:"idempotency_key"`
	Payment string  `json:"payment"`
	Invoice invoice `json:"invoice"`
}

func (b *bankTool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	var in invoice
	if err := json.Unmarshal(args, &in); err != nil {
		return tool.Result{Content: err.Error(), IsError: true}, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	key := tool.IdempotencyKey(ctx)
	// Every execution is logged, before the dedupe, in <bank>.calls: the
	// worker kill campaign counts executions per key from it.
	if err := appendLine(b.path+".calls", map[string]any{"key": key, "attempt": tool.Attempt(ctx)}); err != nil {
		return tool.Result{}, fmt.Errorf("bank call log: %w", err)
	}
	// The bank dedupes on the key, as a real payments API does.
	if e, ok := b.find(key); ok {
		return tool.Result{Content: "payment " + e.Payment + " (already made with this key)"}, nil
	}
	if b.crash == crashBeforePay {
		b.die("before paying")
	}
	if b.delay > 0 {
		time.Sleep(b.delay)
	}
	entries, _ := b.entries()
	e := bankEntry{Key: key, Payment: fmt.Sprintf("pay_%03d", len(entries)+1), Invoice: in}
	line, _ := json.Marshal(e)
	f, err := os.OpenFile(b.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return tool.Result{}, err
	}
	_, err = f.Write(append(line, '\n'))
	if err == nil {
		err = f.Sync()
	}
	f.Close()
	if err != nil {
		return tool.Result{}, fmt.Errorf("bank write: %w", tool.ErrOutcomeUnknown)
	}
	if b.delay > 0 {
		time.Sleep(b.delay)
	}
	if b.crash == crashAfterPay {
		b.die("after paying, before the result is recorded")
	}
	return tool.Result{Content: fmt.Sprintf("payment %s: %d EUR to %s for %s", e.Payment, in.AmountEUR, in.Payee, in.Invoice)}, nil
}

// Reconcile asks the bank whether a payment with this key exists.
func (b *bankTool) Reconcile(ctx context.Context, key string, args json.RawMessage) (tool.Probe, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.find(key); ok {
		return tool.Probe{Outcome: tool.ProbeCommitted, Evidence: fmt.Sprintf("the bank has payment %s with key %s", e.Payment, key),
			Result: &tool.Result{Content: fmt.Sprintf("payment %s: %d EUR to %s for %s", e.Payment, e.Invoice.AmountEUR, e.Invoice.Payee, e.Invoice.Invoice)}}, nil
	}
	return tool.Probe{Outcome: tool.ProbeNotExecuted, Evidence: "the bank has no payment with key " + key}, nil
}

func (b *bankTool) entries() ([]bankEntry, error) {
	f, err := os.Open(b.path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []bankEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e bankEntry
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}

func (b *bankTool) find(key string) (bankEntry, bool) {
	entries, _ := b.entries()
	for _, e := range entries {
		if e.Key == key {
			return e, true
		}
	}
	return bankEntry{}, false
}

// demoScript is what the scripted model says: look the invoice up, pay it,
// then confirm.
const demoScript = `{"turns": [
  {"text": "Let me look up invoice INV-42 first.",
   "tool_calls": [{"id": "call_lookup", "name": "lookup_invoice", "arguments": {"invoice": "INV-42"}}]},
  {"text": "Invoice INV-42 is 1250 EUR to ACME Ltd. Paying it now.",
   "tool_calls": [{"id": "call_pay", "name": "pay_invoice", "arguments": {"invoice": "INV-42", "payee": "ACME Ltd", "amount_eur": 1250}}]},
  {"text": "Done: invoice INV-42 is paid, 1250 EUR to ACME Ltd."}
]}`

// demoAgent is the demo's agent; the parent and the child build the same
// one, so the run's digest matches.
func demoAgent(bank *bankTool, noProbe bool) *actoviq.AgentSpec {
	model, err := scripted.Parse([]byte(demoScript))
	if err != nil {
		panic(err)
	}
	return &actoviq.AgentSpec{ID: "demo-payments", Instructions: "Pay the invoices you are asked to pay.",
		Provider: model, Model: "scripted", Tools: demoTools(bank, noProbe),
		Approval: actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}}
}

// appendLine appends v as one JSON line and syncs the file.
func appendLine(path string, v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
