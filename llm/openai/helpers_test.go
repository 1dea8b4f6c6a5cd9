package openai_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/internal/wiretest"
	"github.com/actoviq/actoviq-go/llm/openai"
	"github.com/actoviq/actoviq-go/llm/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testKey = "sk-test-SECRET-0123456789"

// The shared fake-server helpers, under the names this package's tests use.
type handler = wiretest.Handler

var (
	golden         = wiretest.Golden
	collect        = wiretest.Collect
	countType      = wiretest.CountType
	mustJSON       = wiretest.MustJSON
	fixture        = wiretest.Fixture
	cut            = wiretest.Cut
	cutAfterEvents = wiretest.CutAfterEvents
)

func sse(t testing.TB, name string) handler { return wiretest.SSE(t, "X-Request-Id", name) }

func jsonBody(t testing.TB, status int, name string) handler {
	return wiretest.JSON(t, "X-Request-Id", status, name)
}

type bundle struct {
	srv      *wiretest.Server
	clock    *wiretest.FakeClock
	mu       sync.Mutex
	attempts []llm.Attempt
}

func (b *bundle) Attempts() []llm.Attempt {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]llm.Attempt(nil), b.attempts...)
}

// config points a Config at the server with a fake clock and no jitter.
func (b *bundle) config() *openai.Config {
	tr := &http.Transport{}
	return &openai.Config{
		APIKey:  testKey,
		BaseURL: b.srv.URL + "/v1",
		Models: map[string]llm.Capabilities{
			"no-tools": {Streaming: true},
		},
		Options: transport.Options{HTTPClient: &http.Client{Transport: tr}, Clock: b.clock.Now, Sleep: b.clock.Sleep, Jitter: func(d time.Duration) time.Duration { return d }, OnAttempt: func(a llm.Attempt) {
			b.mu.Lock()
			b.attempts = append(b.attempts, a)
			b.mu.Unlock()
		}},
	}
}

func setup(t testing.TB, handlers ...handler) *bundle {
	t.Helper()
	return &bundle{srv: wiretest.NewServer(t, handlers...), clock: wiretest.NewFakeClock()}
}

func closeIdle(t testing.TB, cfg *openai.Config) {
	t.Cleanup(func() { cfg.HTTPClient.Transport.(*http.Transport).CloseIdleConnections() })
}
