package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/console"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store/storemem"
)

// FuzzDecisionsBody sends arbitrary bodies to the decisions endpoint: the
// answer is a known status with a JSON error (code and message) for every
// refusal, nothing is recorded by a refused request, and nothing panics.
func FuzzDecisionsBody(f *testing.F) {
	for _, s := range []string{
		`{"call_id":"call_1","kind":"approve","note":"ok"}`,
		`{"call_id":"call_1","kind":"reject","reason":"no"}`,
		`{"call_id":"call_1","kind":"committed","result":{"id":"p-1"}}`,
		`{"call_id":"call_1","kind":"failed","message":"not sent"}`,
		`{"call_id":"call_1","kind":"reexecute"}`,
		`{"decisions":[{"call_id":"call_1","kind":"approve"},{"call_id":"call_2","kind":"approve"}]}`,
		`{"call_id":"call_1","kind":"approve","by":"eve"}`,
		`{"call_id":`, `[]`, `null`, `"x"`, `{"decisions":null}`, "\x00\xff",
	} {
		f.Add([]byte(s))
	}
	ctx := context.Background()
	b := &bank{payments: map[string]int{}}
	agent := payAgent(b, `{"to":"ada","amount":5}`)
	f.Fuzz(func(t *testing.T, body []byte) {
		rt, _ := actoviq.New(storemem.New(nil), nil)
		defer rt.Close()
		if _, err := rt.Run(ctx, agent, &actoviq.Input{RunID: "run-1", Items: []item.Item{item.UserText("pay")}}); err != nil {
			t.Fatal(err)
		}
		con, err := console.New(rt, &console.Config{Tokens: []console.Token{{Secret: tokenAlice, Operator: "alice"}}})
		if err != nil {
			t.Fatal(err)
		}
		defer con.Close()
		before, _ := rt.Get(ctx, "run-1")
		req := httptest.NewRequest("POST", "http://127.0.0.1/api/v1/runs/run-1/decisions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tokenAlice)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		con.ServeHTTP(w, req)
		after, _ := rt.Get(ctx, "run-1")
		switch w.Code {
		case http.StatusOK:
			if reflect.DeepEqual(before.Ledger, after.Ledger) {
				t.Fatalf("200 for %q but nothing was recorded", body)
			}
			return
		case http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("status %d for %q: %s", w.Code, body, w.Body)
		}
		var e console.Error
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Code == "" || e.Message == "" {
			t.Fatalf("refusal %d for %q is not a JSON error: %s", w.Code, body, w.Body)
		}
		if !reflect.DeepEqual(before.Ledger, after.Ledger) {
			t.Fatalf("refused (%d %s) but the ledger changed", w.Code, e.Code)
		}
	})
}
