package actoviq

import (
	"strings"
	"unicode/utf8"

	"github.com/actoviq/actoviq-go/store"
)

// Idempotency keys (docs/design.md#effects-and-keys). Every tool call gets one when its ledger entry
// is prepared, and the entry keeps it forever: a re-run or a re-execute
// reuses the persisted key and bumps the attempt, and a later build never
// recomputes it, whatever format that build would give a new call. The
// format of a new call's key is
//
//	<runID>:<callID>            in the tenant "default"
//	<tenant>/<runID>:<callID>   in any other tenant
//
// Run ids and call ids never contain ':' or '/', so a key names one logical
// call of one run of one tenant: two tenants that pick the same run id get
// different keys, and run "acct:7" call "c1" cannot meet run "acct" call
// "7:c1" (the first run id is refused, the second call id replaced).

// keySeparators may not appear in run ids and call ids.
const keySeparators = ":/"

// idempotencyKey is the key of a call prepared now (see above).
func idempotencyKey(tenant, runID, callID string) string {
	if tenant == store.DefaultTenant || tenant == "" {
		return runID + ":" + callID
	}
	return tenant + "/" + runID + ":" + callID
}

// checkRunID refuses a new run's id that would make keys ambiguous.
func checkRunID(field, id string) error {
	switch {
	case id == "":
		return &IDError{Field: field, ID: id, Reason: "empty"}
	case strings.ContainsAny(id, keySeparators):
		return &IDError{Field: field, ID: id, Reason: "run ids may not contain ':' or '/' (they separate the parts of an idempotency key: <tenant>/<runID>:<callID>)"}
	case !utf8.ValidString(id):
		return &IDError{Field: field, ID: id, Reason: "is not UTF-8 (a store keeps text in UTF-8 only)"}
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f {
			return &IDError{Field: field, ID: id, Reason: "contains a control character"}
		}
	}
	return nil
}

// usableCallID reports whether a provider's tool-call id can be the call's
// id in its key; one that cannot is replaced by a ledger-assigned id.
func usableCallID(id string) bool {
	if id == "" || strings.ContainsAny(id, keySeparators) || !utf8.ValidString(id) {
		return false
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}
