package redact_test

import (
	"encoding/json"
	"fmt"

	"github.com/actoviq/actoviq-go/internal/redact"
)

// Tool arguments are redacted before they are persisted. Key order, the
// spelling of numbers and usage counters survive; secrets do not.
func ExampleRedactor_JSON() {
	r := redact.New("session_id")
	args := json.RawMessage(`{"to":"ann@example.com","amount":12345678901234567890,"rate":1.0,` +
		`"auth":{"client_secret":"cs-1","max_tokens":512},"X-Session-Id":"s-9","api_key":"sk-live-123"}`)
	out, changed, err := r.JSON(args)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(out), changed)

	fmt.Println(r.String("provider said: invalid key sk-live-123", "sk-live-123"))
	// Output:
	// {"to":"ann@example.com","amount":12345678901234567890,"rate":1.0,"auth":{"client_secret":"[REDACTED]","max_tokens":512},"X-Session-Id":"[REDACTED]","api_key":"[REDACTED]"} true
	// provider said: invalid key [REDACTED]
}

func ExampleRedactor_Map() {
	h := redact.New().Map(map[string]string{"Authorization": "Bearer sk-1", "Accept": "text/event-stream"})
	fmt.Println(h["Authorization"], h["Accept"])
	// Output: [REDACTED] text/event-stream
}
