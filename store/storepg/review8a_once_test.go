package storepg_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
)

// review8a: OnceTx's ran says whether fn ran, as storesqlite.OnceTx's
// does (6ce86ff: "after fn ran (ran=true)"): fn's error, and an invalid
// value, come with ran = true. storepg answered false, a caller taking it
// to mean that fn (and whatever external effect it made) did not run.
func TestReview8aOnceTxRanAfterFnFailed(t *testing.T) {
	schema := newSchema(t)
	s := openStore(t, schema, nil)
	for name, fn := range map[string]func(pgx.Tx) (json.RawMessage, error){
		"fn's error":    func(pgx.Tx) (json.RawMessage, error) { return nil, errors.New("boom") },
		"invalid value": func(pgx.Tx) (json.RawMessage, error) { return json.RawMessage(`{`), nil },
	} {
		tx, err := s.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, ran, err := s.OnceTx(ctx, tx, "t", "k-"+name, fn)
		_ = tx.Rollback(ctx)
		if err == nil || !ran {
			t.Errorf("%s: ran %v, %v; want ran = true with the error", name, ran, err)
		}
	}
}
