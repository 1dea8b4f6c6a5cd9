package crashtest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	actoviq "github.com/actoviq/actoviq-go"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/store"
	"github.com/actoviq/actoviq-go/store/storepg"
	"github.com/actoviq/actoviq-go/store/storesqlite"
	"github.com/actoviq/actoviq-go/tool"
)

// The one call the scripted model asks for.
const (
	callID   = "c1"
	toolName = "act"
)

// crashSecret is the secret-looking argument of the secret scenarios.
const crashSecret = "sk-crash-7f3a9c"

// leaseTTL is short so that a killed child's claim expires quickly.
const leaseTTL = 300 * time.Millisecond

// hookFunc is called at kill points 3 (running) and 4 (returned); nil in
// the parent.
type hookFunc func(point string)

// newAgent builds the agent of every scenario. Parent and child must build
// it with the same effect and recovery policy: the run's agent digest is
// checked on resume. The hook and the counter path are not part of the
// digest.
func newAgent(effect tool.Effect, rp actoviq.RecoveryPolicy, counter string, hook hookFunc) *actoviq.AgentSpec {
	return newAgentArgs(effect, rp, counter, hook, `{"n":1}`)
}

// newAgentArgs is newAgent with the model asking for c1 with args. A
// secret-looking api_key in them must reach the tool as it was given:
// the tool refuses the redaction placeholder.
func newAgentArgs(effect tool.Effect, rp actoviq.RecoveryPolicy, counter string, hook hookFunc, args string) *actoviq.AgentSpec {
	return newAgentCalls(effect, rp, counter, hook, []scripted.ToolCall{{ID: callID, Name: toolName, Arguments: json.RawMessage(args)}})
}

// newAgentCalls is newAgent with the model asking for calls in its first
// turn (all of the one tool act), then answering "done".
func newAgentCalls(effect tool.Effect, rp actoviq.RecoveryPolicy, counter string, hook hookFunc, calls []scripted.ToolCall) *actoviq.AgentSpec {
	if hook == nil {
		hook = func(string) {}
	}
	act := tool.Func(tool.Spec{Name: toolName, Description: "Performs the test's effect once per invocation.", Effect: effect},
		func(ctx context.Context, in struct {
			N      int    `json:"n"`
			APIKey string `json:"api_key,omitempty"`
		}) (string, error) {
			if in.APIKey != "" && in.APIKey != crashSecret {
				return "", fmt.Errorf("the tool got api_key %q, not the model's argument", in.APIKey)
			}
			line := fmt.Sprintf("%s %d", tool.IdempotencyKey(ctx), tool.Attempt(ctx))
			if err := appendLine(counter, line); err != nil {
				// The line may or may not be on disk.
				return "", fmt.Errorf("append %s: %w (%w)", counter, err, tool.ErrOutcomeUnknown)
			}
			hook(pointRunning)
			return fmt.Sprintf("acted n=%d", in.N), nil
		})
	return &actoviq.AgentSpec{
		ID:    "crashtest",
		Model: "scripted-1",
		Provider: scripted.New(
			scripted.Turn{ToolCalls: calls},
			scripted.Turn{Text: "done"},
		),
		Tools:    []tool.Tool{&afterReturn{Tool: act, hook: hook}},
		Recovery: rp,
	}
}

// afterReturn signals kill point 4 once the tool has returned to the
// runner, before the runtime records anything.
type afterReturn struct {
	tool.Tool
	hook hookFunc
}

func (a *afterReturn) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	res, err := a.Tool.Call(ctx, args)
	a.hook(pointReturned)
	return res, err
}

// appendLine appends one line to the counter file and makes it durable
// before returning: the file is the count of effects that happened.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// effectLine is one line of the counter file: one invocation of the tool.
type effectLine struct {
	Key     string
	Attempt int
}

func readEffects(t testing.TB, path string) []effectLine {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []effectLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, n, ok := strings.Cut(sc.Text(), " ")
		attempt, err := strconv.Atoi(n)
		if !ok || err != nil {
			t.Fatalf("counter file %s: bad line %q", path, sc.Text())
		}
		out = append(out, effectLine{Key: key, Attempt: attempt})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// target says where a scenario's run lives; the child gets it through its
// environment.
type target struct {
	Kind   string // "sqlite" or "pg"
	DSN    string // file path or PostgreSQL URL
	Schema string // PostgreSQL only
}

func (tg target) open(ctx context.Context) (store.Store, error) {
	switch tg.Kind {
	case "sqlite":
		return storesqlite.Open(tg.DSN, nil)
	case "pg":
		// Small pools: many scenarios, each with a parent and a child, run
		// at once against one server.
		return storepg.Open(ctx, tg.DSN, &storepg.Config{Schema: tg.Schema, MaxConns: 2})
	}
	return nil, fmt.Errorf("crashtest: unknown store kind %q", tg.Kind)
}

// backend makes a fresh, isolated target per scenario.
type backend struct {
	name string
	// available skips the test when the backend cannot run here.
	available func(t *testing.T)
	new       func(t *testing.T) target
}

const pgURLEnv = "ACTOVIQ_TEST_PG_URL"

func backends() []backend {
	return []backend{
		{name: "sqlite", available: func(*testing.T) {}, new: newSQLiteTarget},
		{name: "pg", available: pgAvailable, new: newPGTarget},
	}
}

// newSQLiteTarget creates a database file in t.TempDir and applies the
// migrations, so that parent and child never race to do it.
func newSQLiteTarget(t *testing.T) target {
	t.Helper()
	tg := target{Kind: "sqlite", DSN: filepath.Join(t.TempDir(), "actoviq.db")}
	s, err := tg.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return tg
}

func pgAvailable(t *testing.T) {
	t.Helper()
	if os.Getenv(pgURLEnv) == "" {
		t.Skip(pgURLEnv + " not set: the PostgreSQL runs need a server (PG_FAST=1 scripts/pg start DIR prints its URL)")
	}
}

// newPGTarget creates a schema of its own, migrated, and drops it at
// cleanup; it skips when no server is configured.
func newPGTarget(t *testing.T) target {
	t.Helper()
	pgAvailable(t)
	url := os.Getenv(pgURLEnv)
	tg := target{Kind: "pg", DSN: url, Schema: "crash_" + randHex(8)}
	ctx := context.Background()
	s, err := tg.open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	admin := s.(*storepg.Store)
	// Registered first, so it runs after every store of the test is closed.
	t.Cleanup(func() {
		defer admin.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.Pool().Exec(ctx, `DROP SCHEMA IF EXISTS "`+tg.Schema+`" CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", tg.Schema, err)
		}
	})
	return tg
}

func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// resumeWhenFree resumes the run, waiting (bounded) for the claim of a
// dead worker to expire: the store reports when it does.
func resumeWhenFree(ctx context.Context, rt *actoviq.Runtime, a *actoviq.AgentSpec, runID string, decisions ...actoviq.Decision) (*actoviq.RunResult, error) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := rt.Resume(ctx, a, runID, &actoviq.ResumeOptions{Decisions: decisions})
		var held *actoviq.RunHeldError
		if !errors.As(err, &held) || time.Now().After(deadline) {
			return res, err
		}
		wait := 10 * time.Millisecond
		if exp, perr := time.Parse(time.RFC3339Nano, held.Claim.ExpiresAt); perr == nil {
			wait = max(min(time.Until(exp)+5*time.Millisecond, leaseTTL), 5*time.Millisecond)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
}
