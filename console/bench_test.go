package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/console"
	"github.com/actoviq/actoviq-go/item"
	"github.com/actoviq/actoviq-go/store/storesqlite"
)

// BenchmarkInbox measures GET /api/v1/inbox over a SQLite store holding
// 200 interrupted runs (and 200 completed ones): what every live inbox
// costs per poll.
func BenchmarkInbox(b *testing.B) {
	st, err := storesqlite.Open(filepath.Join(b.TempDir(), "actoviq.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	rt, _ := actoviq.New(st, nil)
	defer rt.Close()
	bk := &bank{payments: map[string]int{}}
	agent := payAgent(bk, `{"to":"ada","amount":5}`)
	ctx := context.Background()
	for i := range 400 {
		id := fmt.Sprintf("run-%03d", i)
		if _, err := rt.Run(ctx, agent, &actoviq.Input{RunID: id, Items: []item.Item{item.UserText("pay")}}); err != nil {
			b.Fatal(err)
		}
		if i%2 == 1 {
			if _, err := rt.Resume(ctx, agent, id, &actoviq.ResumeOptions{Decisions: []actoviq.Decision{{CallID: "call_1", Kind: actoviq.DecideApprove, By: "b"}}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	con, _ := console.New(rt, &console.Config{Tokens: []console.Token{{Secret: tokenAlice}}})
	defer con.Close()
	b.ResetTimer()
	for b.Loop() {
		req := httptest.NewRequest("GET", "http://127.0.0.1/api/v1/inbox", nil)
		req.Header.Set("Authorization", "Bearer "+tokenAlice)
		w := httptest.NewRecorder()
		con.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}
