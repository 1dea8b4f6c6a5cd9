// Package providertest is the conformance suite every provider adapter
// passes: the behaviours of the llm.Provider contract and of the shared
// transport (docs/design.md#model-calls) that must not depend on the wire format.
//
// An adapter's test calls [Run] with a [Backend] that builds the provider
// against a fake server and gives fixtures in the adapter's own wire format
// for a few canonical scenarios (a text answer, tool calls, error bodies).
// The suite serves those fixtures whole, cut short, or after failures, and
// checks what the caller sees. Wire details (request bodies, field
// mapping) stay in each adapter's golden tests.
//
// It is a test helper: production code never imports it. It leaves leak
// detection to the adapter package's TestMain (goleak) and checks only
// that a broken-off stream releases its connection.
package providertest
