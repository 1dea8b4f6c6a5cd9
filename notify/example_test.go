package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/notify"
	"github.com/actoviq/actoviq-go/store/storemem"
)

// A run stops for approval and a webhook hears of it, signed. The receiver
// verifies the signature before it trusts the body.
func Example() {
	secret := []byte("a-secret-of-at-least-16-bytes")
	got := make(chan notify.Item, 1)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := notify.Verify(secret, r.Header.Get(notify.SignatureHeader), body, time.Now(), 0); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var it notify.Item
		_ = json.Unmarshal(body, &it)
		got <- it
	}))
	defer hook.Close()

	n, err := notify.New(&notify.Config{URL: hook.URL, Secret: secret, ConsoleURL: "https://console.example"})
	if err != nil {
		panic(err)
	}
	defer n.Close()
	rt, err := actoviq.New(storemem.New(nil), &actoviq.Config{Sinks: []actoviq.EventSink{n}})
	if err != nil {
		panic(err)
	}
	defer rt.Close()

	res, err := rt.Run(context.Background(), payAgent(), &actoviq.Input{RunID: "r-42", Items: []item.Item{item.UserText("pay")}})
	if err != nil {
		panic(err)
	}
	fmt.Println("run:", res.Status)
	it := <-got
	fmt.Println(it.Kind, it.RunID, it.CallID, it.Tool)
	fmt.Println(it.Link)
	// Output:
	// run: interrupted
	// approval r-42 c1 pay
	// https://console.example/runs/r-42
}
