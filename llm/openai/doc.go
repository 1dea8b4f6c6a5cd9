// Package openai implements llm.Provider for the OpenAI Chat Completions API
// ([Chat], also spoken by OpenAI-compatible servers such as Ollama, vLLM and
// LM Studio) and for the OpenAI Responses API ([Responses]).
//
// Both adapters send every request through the one retrying transport of
// package llm/transport: bounded retries, a capped server-requested wait,
// an Idempotency-Key header carrying Request.IdempotencyKey on every
// attempt, and no re-request once a stream has delivered its first event.
// A stream that breaks after that ends with an *llm.StreamInterruptedError
// whose Partial holds the output received so far.
//
// # Configuration
//
// Against OpenAI, set OPENAI_API_KEY (or Config.APIKey):
//
//	chat, err := openai.NewChat(nil) // OPENAI_API_KEY, https://api.openai.com/v1
//	resp, err := openai.NewResponses(&openai.Config{APIKey: key})
//
// Against a local OpenAI-compatible server, point BaseURL (or
// OPENAI_BASE_URL) at its /v1 root. No key is needed for a host other than
// OpenAI's: with none configured, no Authorization header is sent.
// Config.NoAuth suppresses the header even when OPENAI_API_KEY is set.
//
//	ollama, err := openai.NewChat(&openai.Config{BaseURL: "http://localhost:11434/v1"})
//	vllm, err := openai.NewChat(&openai.Config{BaseURL: "http://localhost:8000/v1", NoAuth: true})
//	lmstudio, err := openai.NewChat(&openai.Config{BaseURL: "http://localhost:1234/v1",
//		Models: map[string]llm.Capabilities{"qwen2.5-7b-instruct": {Tools: true, Streaming: true}}})
//
// A missing key for the OpenAI host is ErrMissingAPIKey at construction,
// before any request. For Anthropic use package llm/anthropic.
//
// # Capabilities
//
// Capabilities are declared per model in Config.Models; a model not listed
// gets DefaultCapabilities (tools, streaming, image input and structured
// output, no reasoning items). Generate and Stream check the request
// against them, and the transcript with llm.ValidateTranscript, before any
// network call: a request the model cannot serve fails with
// *llm.UnsupportedError and nothing is sent.
//
// # Wire mapping
//
// Chat Completions: the system prompt is a "system" message; user text and
// images are user content parts; assistant text and tool calls form one
// assistant message with tool_calls; each tool result is a role "tool"
// message with tool_call_id. Streams ask for usage
// (stream_options.include_usage); argument fragments are joined per call
// index and parsed once, when the stream ends. Refusal deltas are
// announced as llm.EventRefusalDelta. A message's annotations (web search
// citations) are kept in the text item's Original, tagged ChatProvider,
// but not sent back: Chat Completions has no place for them in a request,
// nor for reasoning items. An error chunk ({"error":{…}} inside a 200
// stream, with a string code from OpenAI or a numeric one from compatible
// servers) is classified by its code; insufficient_quota is final.
//
// Responses: the system prompt is "instructions"; a tool call is a
// function_call whose call_id is item.ToolCall.ID and whose id (fc_…) is
// item.ToolCall.ProviderID; a result is a function_call_output. Reasoning
// items come back as item.Reasoning whose Opaque is the whole provider item
// JSON, and are sent back verbatim. In a stream, an output item is taken
// as response.output_item.done delivered it, not from the copy in
// response.completed: the API reference says to send back the completed
// item from output_item.done, and with store:false the two copies of a
// reasoning item's encrypted_content can differ. An output message with
// annotations (or logprobs) keeps its content part as the text item's
// Original and goes back as it came; other output items (web_search_call,
// mcp_call, items not known yet) become item.Raw and go back verbatim.
// Refusal deltas are announced as llm.EventRefusalDelta, raw reasoning
// text deltas as llm.EventReasoningDelta. response.incomplete ends a
// stream with a stop reason; response.failed and "error" events are
// provider errors, classified by the status their code stands for, with
// the code at the top level (as the reference shows it) or nested under
// "error" (as the live API sends it); so the transport retries them only
// before the first event, and never a final code such as
// insufficient_quota.
//
// Config.NoStore sends "store": false with "include":
// ["reasoning.encrypted_content"], for zero data retention: the encrypted
// reasoning then goes back whole on every turn, since OpenAI keeps nothing.
//
// Request.Metadata is sent as "metadata" by Responses only; Chat
// Completions leaves it out, since compatible servers may reject it.
//
// Joined arguments that are not a JSON object reject the whole response
// with *llm.MalformedToolCallError: none of its calls can be executed. Empty
// arguments are read as {}.
//
// The API key never appears in an error or event: the transport redacts it,
// and ProviderError messages are scrubbed again here.
package openai
