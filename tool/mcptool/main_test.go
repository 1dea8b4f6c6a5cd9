package mcptool_test

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/actoviq/actoviq-go/tool/mcptool"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		removeTestServer()
		os.Exit(code)
	}))
}

// inMemory returns a server config whose every connection is a fresh
// in-memory session of srv, and counts the connections made.
func inMemory(srv *mcp.Server) (*mcptool.ServerConfig, *countingConnect) {
	cc := &countingConnect{srv: srv}
	return &mcptool.ServerConfig{Connect: cc.connect}, cc
}

type countingConnect struct {
	srv *mcp.Server
	mu  sync.Mutex
	n   int
}

func (c *countingConnect) connect(ctx context.Context) (mcp.Transport, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := c.srv.Connect(context.WithoutCancel(ctx), st, nil); err != nil {
		return nil, err
	}
	return ct, nil
}

func (c *countingConnect) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// newSource builds a source over the given servers and closes it with the
// test.
func newSource(t *testing.T, servers map[string]*mcptool.ServerConfig, opts *mcptool.Options) *mcptool.Source {
	t.Helper()
	src, err := mcptool.New(&mcptool.Config{Servers: servers}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := src.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return src
}

// byName indexes tools by name.
func byName(t *testing.T, ts []*mcptool.Tool) map[string]*mcptool.Tool {
	t.Helper()
	m := map[string]*mcptool.Tool{}
	for _, x := range ts {
		m[x.Spec().Name] = x
	}
	return m
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ptr[T any](v T) *T { return &v }
