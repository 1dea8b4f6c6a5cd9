package anthropic

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

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

	// Header holds extra headers sent on every request (for example
	// anthropic-beta). Nil means none.
	Header http.Header

	// Models declares per-model capabilities. A model that is not listed
	// gets DefaultCapabilities (with Reasoning set when ThinkingBudget is
	// positive). StructuredOutput is always reported false.
	Models map[string]llm.Capabilities

	// HTTPClient sends the requests. Nil means http.DefaultClient.
	HTTPClient *http.Client

	// MaxRetries is how many times the transport may retry a failed
	// attempt. Nil means 2; transport.Retries(0) turns retrying off.
	MaxRetries *int

	// InitialBackoff and MaxBackoff shape the transport's backoff. Zero
	// means the transport defaults (250ms and 30s).
	InitialBackoff, MaxBackoff time.Duration

	// Clock and Jitter are injected into the transport. Nil means the
	// wall clock and the default jitter.
	Clock  transport.Clock
	Jitter func(time.Duration) time.Duration

	// OnAttempt is called after every transport attempt, with secrets
	// scrubbed. Stream also reports each retried attempt as an
	// llm.EventAttempt. Nil means no observer.
	OnAttempt func(transport.Attempt)
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
