// Package wire holds what the provider adapters share around the retrying
// transport: one streaming call turned into llm stream events, with the
// first-event rule. Adapters bring a Decoder for their provider's events.
package wire
