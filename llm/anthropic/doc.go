// Package anthropic implements llm.Provider for the Anthropic Messages API
// ([Messages]).
//
// Requests go through the one retrying transport of package llm/transport:
// bounded retries, a capped server-requested wait, the Idempotency-Key
// header on every attempt, and no re-request once a stream has delivered
// its first event. A stream that breaks after that ends with an
// *llm.StreamInterruptedError whose Partial holds the output so far.
//
// # Configuration
//
// Set ANTHROPIC_API_KEY (or Config.APIKey); the key is sent as x-api-key,
// with anthropic-version: 2023-06-01. ANTHROPIC_BASE_URL (or
// Config.BaseURL) replaces https://api.anthropic.com, for a proxy or a
// gateway; "/v1/messages" is appended.
//
//	claude, err := anthropic.New(nil) // ANTHROPIC_API_KEY
//	claude, err := anthropic.New(&anthropic.Config{APIKey: key, MaxTokens: 8192, ThinkingBudget: 4096})
//
// A missing key for the Anthropic host is ErrMissingAPIKey at
// construction, before any request. For OpenAI and OpenAI-compatible local
// servers (Ollama, vLLM, LM Studio) use package llm/openai.
//
// The Messages API requires max_tokens: Request.MaxOutputTokens when set,
// else Config.MaxTokens, else DefaultMaxTokens (4096).
//
// # Capabilities
//
// Per-model capabilities come from Config.Models, else DefaultCapabilities
// (tools, streaming, image input; reasoning when ThinkingBudget is set).
// Structured output is never claimed, because this adapter does not map an
// output schema. Generate and Stream check the request and the transcript
// (llm.ValidateTranscript) before any network call; a request the model
// cannot serve fails with *llm.UnsupportedError and nothing is sent.
//
// # Wire mapping
//
// The system prompt (and system items) is the top-level "system" field.
// Consecutive items of one role are merged into one message, because the
// API requires alternating roles: an assistant message holds text,
// thinking and tool_use blocks; tool results are user blocks
// {type:"tool_result", tool_use_id, content, is_error}. Thinking blocks
// come back as item.Reasoning whose Opaque is the block JSON with its
// signature, and are sent back verbatim, as are redacted_thinking blocks;
// other providers' reasoning is dropped. A text block with citations
// keeps the whole block as the text item's Original and goes back as it
// came. Every other block (server_tool_use and web_search_tool_result,
// mcp_tool_use and mcp_tool_result, blocks not known yet) becomes an
// item.Raw holding the block and goes back verbatim.
//
// Of Request.Metadata only "user_id" is sent (metadata.user_id): the API
// accepts no other key.
//
// In a stream, ping events are ignored wherever they appear, and a block
// is rebuilt from its content_block_start and its deltas (text, thinking,
// signature, citations, input) into the block a non-streaming response
// carries, so Stream and Generate give the same items. The
// input_json_delta fragments of any block (tool_use, server_tool_use,
// mcp_tool_use…) are joined and parsed once, at content_block_stop; only
// a tool_use, which the client runs, is announced with
// llm.EventToolCallDelta. Input that is not a JSON object rejects the
// response with *llm.MalformedToolCallError, so none of its calls can run. An
// "error" event is classified by its type (overloaded_error as 529,
// api_error as 500, rate_limit_error as 429, …): before the first event the
// transport retries it like that status; after, the stream ends with an
// *llm.StreamInterruptedError wrapping the *llm.ProviderError.
//
// Usage is normalised: item.Usage.InputTokens includes cached tokens
// (Anthropic's input_tokens does not), CachedInputTokens is
// cache_read_input_tokens and CacheWriteTokens is
// cache_creation_input_tokens (the sum of the cache_creation breakdown by
// duration). The server_tool_use request counts are not kept.
package anthropic
