package anthropic

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/transport"
)

// Defaults.
const (
	// DefaultBaseURL is used when neither Config.BaseURL nor
	// ANTHROPIC_BASE_URL is set.
	DefaultBaseURL = "https://api.anthropic.com"
	// DefaultMaxTokens is sent as max_tokens (which the Messages API
	// requires) when neither Request.MaxOutputTokens nor Config.MaxTokens
	// is set.
	DefaultMaxTokens = 4096
	// Version is sent as the anthropic-version header.
	Version = "2023-06-01"
	// ReasoningProvider tags the item.Reasoning values (thinking blocks)
	// and item.Raw values this adapter produces; only those are sent back.
	ReasoningProvider = "anthropic"
)

// ErrMissingAPIKey is returned by New when no API key is configured for
// the Anthropic host and Config.NoAuth is not set.
var ErrMissingAPIKey = errors.New("anthropic: no API key: set Config.APIKey or ANTHROPIC_API_KEY (or Config.NoAuth for a server without authentication)")

// DefaultCapabilities is what a model missing from Config.Models is assumed
// to support: tools, streaming and image input; reasoning only when
// Config.ThinkingBudget is set. Structured output is never claimed: this
// adapter does not map an output schema, so a request with one fails
// before any network call.
var DefaultCapabilities = llm.Capabilities{Tools: true, Streaming: true, ImageInput: true}

// Config configures New. A nil *Config means every default. New copies it.
type Config struct {
	// APIKey is sent as the x-api-key header. It never appears in an
	// error or an event. Empty means ANTHROPIC_API_KEY; if that is empty
	// too, New fails with ErrMissingAPIKey when the base URL is the
	// Anthropic host, and sends no key to any other host.
	APIKey string

	// APIKeySource names where APIKey came from, for the hint of an
	// authentication failure ("check the API key in ANTHROPIC_API_KEY"). A
	// program that read the key from somewhere else says where. Empty
	// means "Config.APIKey", or "ANTHROPIC_API_KEY" when the key was read
	// from the environment.
	APIKeySource string

	// NoAuth sends no x-api-key header at all and never reports a missing
	// key. Zero (false) means authenticate when a key is known.
	NoAuth bool

	// BaseURL is the API root; "/v1/messages" is appended. Empty means
	// ANTHROPIC_BASE_URL, else DefaultBaseURL.
	BaseURL string

	// MaxTokens is max_tokens for a request whose MaxOutputTokens is 0.
	// Zero means DefaultMaxTokens (4096). Negative is invalid.
	MaxTokens int

	// ThinkingBudget, when positive, turns extended thinking on with this
	// budget_tokens (it must stay below max_tokens). Thinking blocks come
	// back as item.Reasoning and are sent back verbatim with their
	// signature. Zero means thinking off. Negative is invalid.
	ThinkingBudget int

	// NoStreaming makes every model report Capabilities.Streaming false,
	// so the runtime asks with Generate instead of Stream. One model alone
	// is switched off by listing it in Models with Streaming false. Zero
	// (false) means stream.
	NoStreaming bool

	// Header holds extra headers sent on every request (for example
	// anthropic-beta). Nil means none.
	Header http.Header

	// Models declares per-model capabilities. A model that is not listed
	// gets DefaultCapabilities (with Reasoning set when ThinkingBudget is
	// positive). StructuredOutput is always reported false.
	Models map[string]llm.Capabilities

	// Options are the transport settings: HTTP client, retries, backoff,
	// clock, jitter and the attempt observer (see [transport.Options] for
	// each default). Stream also reports each retried attempt as an
	// llm.EventAttempt.
	transport.Options
}

func (c *Config) validate() error {
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("anthropic: Config.BaseURL %q is not an absolute http(s) URL", c.BaseURL)
		}
	}
	if c.MaxTokens < 0 {
		return fmt.Errorf("anthropic: Config.MaxTokens is %d, must be >= 0", c.MaxTokens)
	}
	if c.ThinkingBudget < 0 {
		return fmt.Errorf("anthropic: Config.ThinkingBudget is %d, must be >= 0", c.ThinkingBudget)
	}
	if c.MaxRetries != nil && *c.MaxRetries < 0 {
		return fmt.Errorf("anthropic: Config.MaxRetries is %d, must be >= 0", *c.MaxRetries)
	}
	return nil
}

func isAnthropicHost(base string) bool {
	u, err := url.Parse(base)
	if err != nil {
		return false
	}
	h := strings.ToLower(u.Hostname())
	return h == "api.anthropic.com" || strings.HasSuffix(h, ".anthropic.com")
}
