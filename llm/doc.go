// Package llm defines how the runtime talks to a model provider: the
// [Provider] interface, the provider-neutral [Request] and [Response], stream
// events, per-model [Capabilities], and the provider error vocabulary.
//
// Adapters (llm/openai, llm/anthropic, llm/scripted) implement [Provider] on
// top of the one retrying HTTP client in llm/transport. Before any network
// call an adapter checks the request with [Capabilities.Check] and the
// transcript with [ValidateTranscript]: a transcript holding a tool call
// without its result never reaches a provider.
//
// Retries belong to the transport alone. [ProviderError.Retryable] and
// [ProviderError.Status] are diagnostics: nothing above the transport retries
// a model call, a turn or a run because of them. A stream that broke after
// output reached the caller is never replayed; it ends with a
// [*StreamInterruptedError] that carries the partial output as evidence.
//
// This package uses the standard library and package item only.
package llm
