// Package actoviqvet is a go vet-style analyzer for code that defines
// actoviq tools. It reports three mistakes that turn a crash into a
// duplicated payment or an unanswerable question:
//
//   - a tool.Spec literal without an Effect. The zero value is
//     side-effect, which is safe but usually not what was meant: a read
//     declared by omission waits for approvals and reconciliations it does
//     not need. Say the effect, even when it is tool.SideEffect.
//   - a side-effect tool (tool.Func with a side-effect Spec, or a type
//     whose Spec method returns one and that has a Call method) whose
//     function never calls tool.IdempotencyKey(ctx). Without the key the
//     target system cannot deduplicate a re-execute after a crash.
//   - an HTTP request built inside a side-effect tool (http.NewRequest,
//     http.NewRequestWithContext) when the function never sets an
//     Idempotency-Key header, and any http.Post or http.PostForm there
//     (they cannot carry one). Both reports suggest package tool/httptool,
//     which sends the call's key and maps the answer (a timeout, 409, 5xx)
//     to the ledger's outcome; a body that sends through its Client.Do
//     reads the key and sets the header as far as the analyzer is
//     concerned.
//
// The analyzer looks at one function body: a key read, or a header set, in
// a helper it calls is not seen. Silence such a report with a comment
// containing "actoviq-vet:ignore" on the reported line or the line above.
//
// Run it with the command in cmd/actoviq-vet:
//
//	go run github.com/actoviq/actoviq-go/cmd/actoviq-vet ./...
//
// or as a vet tool: go vet -vettool=$(which actoviq-vet) ./...
package actoviqvet
