package httptool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"

	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/httptool"
)

// A payment tool over an HTTP API that dedupes on the Idempotency-Key
// header. The tool sends the call's own key; a second attempt of the same
// call (same key) gets the API's record of the first, marked replayed, and
// pays nothing twice. Because the tool declares that its target dedupes, it
// has a probe: after a crash, recovery settles the call by asking again.
func ExampleNewTool() {
	var mu sync.Mutex
	paid := map[string]string{} // idempotency key → payment id
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		key := r.Header.Get("Idempotency-Key")
		id, seen := paid[key]
		if !seen {
			id = fmt.Sprintf("pay_%d", len(paid)+1)
			paid[key] = id
		} else {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		fmt.Fprintf(w, `{"id":%q}`, id)
	}))
	defer api.Close()

	type Payment struct {
		To     string `json:"to"`
		Amount int    `json:"amount"`
	}
	type Receipt struct {
		ID string `json:"id"`
	}
	client, err := httptool.New(&httptool.Config{Dedupes: true})
	if err != nil {
		panic(err)
	}
	pay, err := httptool.NewTool(tool.Spec{Name: "pay", Description: "Send money", Effect: tool.SideEffect}, client,
		func(ctx context.Context, p Payment) (*http.Request, error) {
			body, _ := json.Marshal(p)
			return http.NewRequestWithContext(ctx, "POST", api.URL+"/v1/payments", bytes.NewReader(body))
		},
		func(res *httptool.Response) (Receipt, error) {
			var r Receipt
			return r, json.Unmarshal(res.Body, &r)
		})
	if err != nil {
		panic(err)
	}

	// The runtime puts the call's key in the context; here we do.
	ctx := tool.WithIdempotencyKey(context.Background(), "run-1:call_1")
	args := json.RawMessage(`{"to":"ada","amount":5}`)
	first, _ := pay.Call(ctx, args)
	again, _ := pay.Call(ctx, args)
	fmt.Println(first.Content)
	fmt.Println(again.Content)
	fmt.Println("payments:", len(paid))
	_, probe := pay.(tool.Reconciler)
	fmt.Println("has a probe:", probe)

	// Outside a tool call there is no key, and nothing is sent.
	_, err = pay.Call(context.Background(), args)
	fmt.Println(errors.Is(err, httptool.ErrNoKey))
	// Output:
	// {"id":"pay_1"}
	// {"id":"pay_1"}
	// (The service answered from its record of an earlier request with this call's idempotency key: nothing was done twice.)
	// payments: 1
	// has a probe: true
	// true
}

// What a Client's answer means for the call: a 409 from a target that is
// still processing the key is an unknown outcome with a suggested wait,
// never a failure the model sees.
func ExampleClient_Do() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(http.StatusConflict)
	}))
	defer api.Close()
	client, _ := httptool.New(nil)
	ctx := tool.WithIdempotencyKey(context.Background(), "run-1:call_1")
	req, _ := http.NewRequestWithContext(ctx, "POST", api.URL+"/v1/payments", nil)
	_, err := client.Do(req)
	var busy *httptool.InProgressError
	fmt.Println(errors.As(err, &busy), busy.RetryAfter, errors.Is(err, tool.ErrOutcomeUnknown))
	// Output: true 3s true
}
