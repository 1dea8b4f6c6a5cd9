package crashtest

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(envChild) == "1" {
		// A child is killed at its kill point; it never gets to a leak check.
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(m)
}
