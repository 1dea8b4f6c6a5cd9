package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/tool"
)

// The demo's world: an invoice lookup (a read) and a bank whose payments
// (a side effect) are lines in a file, keyed by the idempotency key.

const demoPaymentMarker = "DEMO: payment sent to the bank, the process is about to record it"

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
	// crash makes the tool stop dead after the bank took the payment,
	// before it returns: the demo kills the process there.
	crash bool
	// hang makes the bank hang "before-pay" or "after-pay", so that a
	// person (or a test) can kill the process at that point. It comes from
	// ACTOVIQ_DEMO_BANK_HANG.
	hang string
	out  io.Writer
	mu   sync.Mutex
}

// demoHangMarker is printed when the bank hangs on purpose.
const demoHangMarker = "DEMO: the bank hangs"

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
	// The bank dedupes on the key, as a real payments API does.
	if e, ok := b.find(key); ok {
		return tool.Result{Content: "payment " + e.Payment + " (already made with this key)"}, nil
	}
	if b.hang == "before-pay" {
		fmt.Fprintln(b.out, demoHangMarker, "before paying; kill this process now")
		select {}
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
	if b.crash {
		fmt.Fprintln(b.out, demoPaymentMarker)
		select {} // the demo SIGKILLs this process here
	}
	if b.hang == "after-pay" {
		fmt.Fprintln(b.out, demoHangMarker, "after paying; kill this process now")
		select {}
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
func demoAgent(bank *bankTool) *actoviq.AgentSpec {
	model, err := scripted.Parse([]byte(demoScript))
	if err != nil {
		panic(err)
	}
	return &actoviq.AgentSpec{ID: "demo-payments", Instructions: "Pay the invoices you are asked to pay.",
		Provider: model, Model: "scripted", Tools: []tool.Tool{lookupInvoiceTool(), bank},
		Approval: actoviq.ApprovalPolicy{Effects: []tool.Effect{tool.SideEffect}}}
}
