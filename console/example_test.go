package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/console"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store/storemem"
)

// A console over a runtime: a program (or a script with curl) finds what
// waits in the inbox, approves it with the JSON API, and resumes the run.
// The decision is recorded under the name bound to the token.
func Example() {
	ctx := context.Background()
	b := &bank{payments: map[string]int{}}
	agent := payAgent(b, `{"to":"ada","amount":5}`)
	rt, _ := actoviq.New(storemem.New(nil), nil)
	defer rt.Close()
	_, _ = rt.Run(ctx, agent, &actoviq.Input{RunID: "run-1", Items: []item.Item{item.UserText("pay ada 5")}})

	con, _ := console.New(rt, &console.Config{
		Tokens: []console.Token{{Secret: "s3cret-token-for-the-example", Operator: "alice"}},
		Resume: func(ctx context.Context, runID string) (*actoviq.RunResult, error) {
			return rt.Resume(ctx, agent, runID, nil)
		},
	})
	defer con.Close()
	srv := httptest.NewServer(con)
	defer srv.Close()
	call := func(method, path, body string, v any) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer s3cret-token-for-the-example")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer res.Body.Close()
		_ = json.NewDecoder(res.Body).Decode(v)
	}

	var inbox console.Inbox
	call("GET", "/api/v1/inbox", "", &inbox)
	it := inbox.Items[0]
	fmt.Println(it.Kind, it.RunID, it.Tool, it.Effect)

	var dec console.DecisionsResponse
	call("POST", "/api/v1/runs/run-1/decisions", `{"call_id":"call_1","kind":"approve","note":"invoice 42"}`, &dec)
	fmt.Println("recorded by", dec.By)

	var res console.ResumeResponse
	call("POST", "/api/v1/runs/run-1/resume", "", &res)
	fmt.Println(res.Status, len(b.payments), "payment")
	// Output:
	// approval run-1 pay side-effect
	// recorded by alice
	// completed 1 payment
}
