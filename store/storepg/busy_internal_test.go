package storepg

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/actoviq/actoviq-go/store"
)

// A transaction the server aborted for contention (a serialization
// failure or deadlock that outlasted inTx's retries, a lock it could not
// get) wrote nothing: it is a *store.BusyError, which the engine may send
// again. Other server errors, and errors without a SQLSTATE (a lost
// connection, whose outcome is unknown), are not.
func TestBusyErrorsAreTyped(t *testing.T) {
	for code, busy := range map[string]bool{"40001": true, "40P01": true, "55P03": true, "23505": false, "08006": false} {
		err := mapErr("write run r", fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: code, Message: "m"}))
		var be *store.BusyError
		if errors.As(err, &be) != busy || errors.Is(err, store.ErrBusy) != busy {
			t.Errorf("%s: %v, busy %v", code, err, busy)
		}
	}
	if err := mapErr("write run r", errors.New("conn closed")); errors.Is(err, store.ErrBusy) {
		t.Errorf("a lost connection is busy: %v", err)
	}
}
