package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/httptool"
)

// The demo's second bank: the same payment as an HTTP API that dedupes on
// the Idempotency-Key header, called by a tool built with tool/httptool.

// httpBank is a loopback payments API. It records a payment per key; a
// request whose key it has seen gets the stored answer, marked
// Idempotent-Replayed. The first request of each key is held until the
// caller gives up (a slow answer that never arrives, though the payment
// was made).
type httpBank struct {
	mu       sync.Mutex
	payments map[string]string // key header value → payment id
	requests []string          // key header values, in order
	srv      *http.Server
	url      string
}

func startHTTPBank() (*httpBank, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &httpBank{payments: map[string]string{}, url: "http://" + ln.Addr().String()}
	b.srv = &http.Server{Handler: b, ReadHeaderTimeout: 10 * time.Second}
	go b.srv.Serve(ln)
	return b, nil
}

func (b *httpBank) close() { b.srv.Close() }

func (b *httpBank) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		http.Error(w, `{"error":"Idempotency-Key is required"}`, http.StatusBadRequest)
		return
	}
	b.mu.Lock()
	b.requests = append(b.requests, key)
	id, seen := b.payments[key]
	if !seen {
		id = fmt.Sprintf("pay_h%03d", len(b.payments)+1)
		b.payments[key] = id
	}
	b.mu.Unlock()
	if !seen {
		<-r.Context().Done() // the payment is made; the answer is lost
		return
	}
	w.Header().Set("Idempotent-Replayed", "true")
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"payment":%q,"status":"paid"}`, id)
}

func (b *httpBank) counts(key string) (requests, payments int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, k := range b.requests {
		if k == key {
			requests++
		}
	}
	return requests, len(b.payments)
}

type httpPayment struct {
	Invoice   string `json:"invoice"`
	Payee     string `json:"payee"`
	AmountEUR int    `json:"amount_eur"`
}

type httpReceipt struct {
	Payment string `json:"payment"`
	Status  string `json:"status"`
}

// httpPayAgent pays INV-43 through the HTTP bank. Its tool declares that
// the bank dedupes on the key, so it has a probe that asks again.
func httpPayAgent(url string) (*actoviq.AgentSpec, error) {
	client, err := httptool.New(&httptool.Config{Dedupes: true})
	if err != nil {
		return nil, err
	}
	pay, err := httptool.NewTool[httpPayment, httpReceipt](tool.Spec{Name: "pay_invoice_http", Description: "Pay an invoice through the bank's HTTP API",
		Effect: tool.SideEffect, Timeout: 500 * time.Millisecond}, client,
		func(ctx context.Context, p httpPayment) (*http.Request, error) {
			body, err := json.Marshal(p)
			if err != nil {
				return nil, err
			}
			req, err := http.NewRequestWithContext(ctx, "POST", url+"/v1/payments", bytes.NewReader(body))
			if err == nil {
				req.Header.Set("Content-Type", "application/json")
			}
			return req, err
		}, nil)
	if err != nil {
		return nil, err
	}
	model := scripted.New(
		scripted.Turn{Text: "Paying invoice INV-43 through the bank's API.", ToolCalls: []scripted.ToolCall{{ID: "call_pay", Name: "pay_invoice_http",
			Arguments: json.RawMessage(`{"invoice":"INV-43","payee":"ACME Ltd","amount_eur":80}`)}}},
		scripted.Turn{Text: "Done: invoice INV-43 is paid, 80 EUR to ACME Ltd."},
	)
	return &actoviq.AgentSpec{ID: "demo-payments-http", Instructions: "Pay the invoices you are asked to pay.",
		Provider: model, Model: "scripted", Tools: []tool.Tool{pay}}, nil
}

// demoHTTP is the demo's last step: the HTTP bank holds the payment's
// answer past the tool's deadline; the run stops for reconciliation; its
// resume asks the bank again with the same key, and the bank's replay
// settles the call. One payment, two requests.
func (e *env) demoHTTP(ctx context.Context, n *demoNarrator, open func() (*actoviq.Runtime, func(), error)) error {
	bank, err := startHTTPBank()
	if err != nil {
		return err
	}
	defer bank.close()
	agent, err := httpPayAgent(bank.url)
	if err != nil {
		return err
	}
	const runID = "demo-http"
	n.step_("the same payment over HTTP",
		"The bank is now an HTTP API ("+bank.url+") that dedupes on the Idempotency-Key header. The tool is",
		"built with tool/httptool: it sends the call's key, and declares that the bank dedupes on it.",
		"The bank makes the payment but holds its answer past the tool's 500 ms deadline.")
	rt, done, err := open()
	if err != nil {
		return err
	}
	defer done()
	res, err := rt.Run(ctx, agent, &actoviq.Input{RunID: runID, Items: []item.Item{item.UserText("Please pay invoice INV-43.")}})
	if err != nil {
		return err
	}
	if res.Status != actoviq.StatusInterrupted || len(res.Interruptions) != 1 || res.Interruptions[0].Kind != actoviq.InterruptReconciliation {
		return fmt.Errorf("expected a reconciliation interruption, got %s", res.Status)
	}
	in := res.Interruptions[0]
	n.say("run %s: %s for %s: a timeout after the request left is an unknown outcome, never a failure.", runID, res.Status, in.Kind)
	n.say("Resuming runs the tool's probe: it sends the same request with the same key (%s).", in.IdempotencyKey)
	res, err = rt.Resume(ctx, agent, runID, nil)
	if err != nil {
		return err
	}
	if res.Status != actoviq.StatusCompleted {
		return fmt.Errorf("expected the HTTP run to complete, got %s", res.Status)
	}
	info, err := rt.Get(ctx, runID)
	if err != nil {
		return err
	}
	en := ledgerEntry(info, in.CallID)
	if en == nil || en.Resolution == nil {
		return errors.New("the HTTP payment was not settled by the probe")
	}
	var ev actoviq.ProbeAnswer
	json.Unmarshal(en.Resolution.Evidence, &ev)
	key, _ := httptool.SFString(in.IdempotencyKey)
	requests, payments := bank.counts(key)
	n.say("Settled by %s, whose evidence is recorded with the call:", en.Resolution.By)
	for _, part := range strings.Split(ev.Evidence, "; ") {
		n.say("  %s", part)
	}
	n.say("The bank received %d requests with that key and made %d payment. The run completed.", requests, payments)
	if requests != 2 || payments != 1 {
		return fmt.Errorf("expected 2 requests and 1 payment at the HTTP bank, got %d and %d", requests, payments)
	}
	return nil
}
