package cli

import (
	"fmt"
	"io"
	"strings"

	actoviq "github.com/actoviq/actoviq-go"
)

// printProviderFailure shows a provider interruption with its evidence.
func printProviderFailure(w io.Writer, in *actoviq.Interruption) {
	fmt.Fprintf(w, "- provider: the model call failed\n")
	fmt.Fprintf(w, "  why: %s\n", in.Reason)
	pf := in.Provider
	if pf == nil {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  %s model %s, turn %d: %d attempt(s)", pf.Provider, pf.Model, pf.Turn, pf.Attempts)
	if pf.Status != 0 {
		fmt.Fprintf(&b, ", last status %d", pf.Status)
	}
	if pf.Code != "" {
		fmt.Fprintf(&b, ", code %s", pf.Code)
	}
	if pf.RequestID != "" {
		fmt.Fprintf(&b, ", request id %s", pf.RequestID)
	}
	if pf.RetryAfter > 0 {
		fmt.Fprintf(&b, ", server asked to wait %s", pf.RetryAfter)
	}
	fmt.Fprintf(&b, "; %d in a row", pf.Consecutive)
	fmt.Fprintln(w, b.String())
	fmt.Fprintf(w, "  error: %s\n", pf.Error)
	if len(pf.Partial) > 0 {
		fmt.Fprintf(w, "  partial output (evidence only, never replayed): %d item(s)\n", len(pf.Partial))
	}
}
