package storepg

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// Migration 019 takes a store written at 018 forward in place: run_write
// is replaced, the rows stay as they were. A run write fenced by a claim
// its holder released before the upgrade is fenced out (Released); one
// fenced by a held claim (a drive that was running across the upgrade)
// and one by a claim that expired without a release still write.
func TestMigrateFenceReleased(t *testing.T) {
	url, schema, exec := schemaBefore(t, "t_fence_", func(m migration) bool { return strings.HasSuffix(m.Name, "_fence_released") })
	ctx := context.Background()
	now := time.Now()
	for _, r := range []struct {
		id      string
		held    bool
		expires time.Duration
	}{{"rel", false, -time.Second}, {"live", true, time.Minute}, {"expired", true, -time.Minute}} {
		exec(`INSERT INTO {{schema}}.runs (tenant, id, parent_id, session_id, agent_id, agent_digest, status, wait_kind, checkpoint, revision, event_seq, created_at, updated_at)
			VALUES ('t', $1, '', '', 'a', 'd', 'running', '', '{"v":1}', 1, 0, $2, $2)`, r.id, now)
		exec(`INSERT INTO {{schema}}.claims (tenant, key, holder, epoch, expires_at, heartbeat_at, held) VALUES ('t', $1, 'w', 3, $2, $3, $4)`,
			store.RunClaimKey(r.id), now.Add(r.expires), now.Add(-2*time.Minute), r.held)
	}
	s, err := Open(ctx, url, &Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	write := func(id string) error {
		_, err := s.RunWrite(ctx, &store.RunWriteParams{Tenant: "t", RunID: id, Fence: &store.Fence{Key: store.RunClaimKey(id), Holder: "w", Epoch: 3},
			Run: &store.RunUpdate{ExpectedRevision: 1, Status: store.RunRunning, Checkpoint: json.RawMessage(`{"v":2}`)}})
		return err
	}
	var fe *store.FencedError
	if err := write("rel"); !errors.As(err, &fe) || !fe.Released {
		t.Fatalf("a write under a claim released before the upgrade: %v, want fenced out (released)", err)
	}
	for _, id := range []string{"live", "expired"} {
		if err := write(id); err != nil {
			t.Fatalf("a write under the %s claim: %v", id, err)
		}
	}
}
