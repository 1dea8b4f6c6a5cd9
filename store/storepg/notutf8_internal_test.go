package storepg

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/actoviq/actoviq-go/store"
)

// Text that is not UTF-8 reaching the server in a field the shared
// validation does not check is refused as that validation refuses it: a
// *store.InvalidError, not the server's bare SQLSTATE 22021.
func TestNotUTF8IsInvalid(t *testing.T) {
	url := os.Getenv("ACTOVIQ_TEST_PG_URL")
	if url == "" {
		t.Skip("ACTOVIQ_TEST_PG_URL not set: PostgreSQL tests need a server; scripts/test starts one")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var out string
	err = mapErr("echo", conn.QueryRow(ctx, `SELECT $1::text`, "bad \xff").Scan(&out))
	var ie *store.InvalidError
	if !errors.Is(err, store.ErrInvalid) || !errors.As(err, &ie) || ie.Field != "echo" {
		t.Fatalf("text not UTF-8: %v (%T), want an *store.InvalidError for echo", err, err)
	}
}
