package openai

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/actoviq/actoviq-go/internal/redact"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/internal/wire"
	"github.com/actoviq/actoviq-go/llm/transport"
)

// DefaultBaseURL is the OpenAI API root used when neither Config.BaseURL
// nor OPENAI_BASE_URL is set.
const DefaultBaseURL = "https://api.openai.com/v1"

// ErrMissingAPIKey is returned by NewChat and NewResponses when no API key
// is configured for the OpenAI host and Config.NoAuth is not set.
var ErrMissingAPIKey = errors.New("openai: no API key: set Config.APIKey or OPENAI_API_KEY (or Config.NoAuth for a server without authentication)")

// DefaultCapabilities is what a model missing from Config.Models is assumed
// to support: tools, streaming, image input and structured output, but no
// reasoning items. The provider's own error stays the final word.
var DefaultCapabilities = llm.Capabilities{Tools: true, Streaming: true, ImageInput: true, StructuredOutput: true}

// Config configures NewChat and NewResponses. A nil *Config means every
// default. The constructors copy it; changing it afterwards has no effect.
type Config struct {
	// APIKey is sent as "Authorization: Bearer <key>". It never appears in
	// an error or an event.
	// Empty means the OPENAI_API_KEY environment variable. If that is empty
	// too, the constructor fails with ErrMissingAPIKey when the base URL is
	// the OpenAI host; for any other host (a local Ollama, vLLM or LM
	// Studio server) the request is sent without an Authorization header.
	APIKey string

	// APIKeySource names where APIKey came from, for the hint of an
	// authentication failure ("check the API key in OPENAI_API_KEY"). A
	// program that read the key from somewhere else says where. Empty
	// means "Config.APIKey", or "OPENAI_API_KEY" when the key was read from
	// the environment.
	APIKeySource string

	// NoAuth sends no Authorization header even when a key is configured
	// or OPENAI_API_KEY is set, and never reports a missing key. For local
	// servers. Zero (false) means authenticate when a key is known.
	NoAuth bool

	// BaseURL is the API root, for example "http://localhost:11434/v1"
	// for Ollama. "/chat/completions" or "/responses" is appended.
	// Empty means OPENAI_BASE_URL, else DefaultBaseURL.
	BaseURL string

	// Organization and Project, when set, are sent as the
	// OpenAI-Organization and OpenAI-Project headers. Empty means none.
	Organization, Project string

	// Header holds extra headers sent on every request (an OpenAI-compatible
	// gateway may want its own). Nil means none.
	Header http.Header

	// Models declares per-model capabilities, keyed by model name. A model
	// that is not listed gets DefaultCapabilities. Nil means every model
	// gets DefaultCapabilities.
	Models map[string]llm.Capabilities

	// LegacyMaxTokens makes the Chat adapter send Request.MaxOutputTokens
	// as "max_tokens" instead of "max_completion_tokens", for older
	// OpenAI-compatible servers. Zero (false) means max_completion_tokens.
	// The Responses adapter always sends max_output_tokens.
	LegacyMaxTokens bool

	// NoStore makes the Responses adapter send "store": false and ask for
	// "include": ["reasoning.encrypted_content"], for organisations under
	// zero data retention or anyone who does not want OpenAI to keep the
	// responses. Reasoning items then come back encrypted and are sent back
	// whole (as response.output_item.done delivered them) on the next turn,
	// which is how a stateless conversation keeps its reasoning. Zero
	// (false) means the API's default (store true). Chat ignores it.
	NoStore bool
	// Include lists further values for the Responses "include" field (for
	// example "message.output_text.logprobs"); they are sent after the one
	// NoStore adds, without duplicates. Nil means none. Chat ignores it.
	Include []string

	// NoStreaming makes every model of this provider report
	// Capabilities.Streaming false, so the runtime asks with Generate (one
	// JSON response) instead of Stream. For servers whose streaming is
	// broken or slower; one model alone is switched off by listing it in
	// Models with Streaming false. Zero (false) means stream where the
	// model's capabilities say it can.
	NoStreaming bool

	// Options are the transport settings: HTTP client, retries, backoff,
	// clock, jitter and the attempt observer (see [transport.Options] for
	// each default). Stream also reports each retried attempt as an
	// llm.EventAttempt.
	transport.Options
}

// validate names the bad field.
func (c *Config) validate() error {
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("openai: Config.BaseURL %q is not an absolute http(s) URL", c.BaseURL)
		}
	}
	if c.MaxRetries != nil && *c.MaxRetries < 0 {
		return fmt.Errorf("openai: Config.MaxRetries is %d, must be >= 0", *c.MaxRetries)
	}
	return nil
}

// client is what both adapters share: resolved settings and the transport.
type client struct {
	name      string
	apiKey    string
	keySource string
	baseURL   string
	header    http.Header
	models    map[string]llm.Capabilities
	legacy    bool
	noStore   bool
	include   []string
	noStream  bool
	tcfg      transport.Config
	tr        *transport.Client
}

func newClient(name string, cfg *Config) (*client, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	c := *cfg // copy on entry
	if c.BaseURL == "" {
		c.BaseURL = os.Getenv("OPENAI_BASE_URL")
	}
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	source := c.APIKeySource
	if source == "" {
		source = "Config.APIKey"
	}
	if c.APIKey == "" && !c.NoAuth {
		c.APIKey = os.Getenv("OPENAI_API_KEY")
		if c.APIKeySource == "" {
			source = "OPENAI_API_KEY"
		}
	}
	if c.NoAuth {
		c.APIKey = ""
	}
	if c.APIKey == "" && !c.NoAuth && isOpenAIHost(c.BaseURL) {
		return nil, ErrMissingAPIKey
	}
	h := http.Header{}
	for k, vs := range c.Header {
		h[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	h.Set("Content-Type", "application/json")
	if c.APIKey != "" {
		h.Set("Authorization", "Bearer "+c.APIKey)
	}
	if c.Organization != "" {
		h.Set("OpenAI-Organization", c.Organization)
	}
	if c.Project != "" {
		h.Set("OpenAI-Project", c.Project)
	}
	models := make(map[string]llm.Capabilities, len(c.Models))
	for k, v := range c.Models {
		models[k] = v
	}
	cl := &client{
		name:      name,
		apiKey:    c.APIKey,
		keySource: source,
		baseURL:   strings.TrimRight(c.BaseURL, "/"),
		header:    h,
		models:    models,
		legacy:    c.LegacyMaxTokens,
		noStore:   c.NoStore,
		include:   includeList(c.NoStore, c.Include),
		noStream:  c.NoStreaming,
		tcfg:      transport.Config{Options: c.Options},
	}
	if c.APIKey != "" {
		cl.tcfg.Redact = []string{c.APIKey}
	}
	tr, err := transport.New(&cl.tcfg)
	if err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	cl.tr = tr
	return cl, nil
}

func isOpenAIHost(base string) bool {
	u, err := url.Parse(base)
	if err != nil {
		return false
	}
	h := strings.ToLower(u.Hostname())
	return h == "api.openai.com" || strings.HasSuffix(h, ".openai.com")
}

func (c *client) capabilities(model string) llm.Capabilities {
	caps, ok := c.models[model]
	if !ok {
		caps = DefaultCapabilities
	}
	if c.noStream {
		caps.Streaming = false
	}
	return caps
}

// stream runs one streaming call through the shared first-event rule.
func (c *client) stream(ctx context.Context, treq *transport.Request, dec wire.Decoder) iter.Seq2[llm.StreamEvent, error] {
	st := &wire.Streamer{Provider: c.name, Config: c.tcfg, Classify: c.providerError, Scrub: c.scrub}
	return st.Stream(ctx, treq, dec)
}

// prepare checks a request before anything is sent and encodes it.
func (c *client) prepare(req *llm.Request, stream bool, path string, encode func(*llm.Request, bool) ([]byte, error)) (*transport.Request, error) {
	model := ""
	if req != nil {
		model = req.Model
	}
	if err := wire.Check(c.name, c.capabilities(model), req, stream); err != nil {
		return nil, err
	}
	body, err := encode(req, stream)
	if err != nil {
		return nil, fmt.Errorf("%s: encode request: %w", c.name, err)
	}
	return c.request(path, body, req), nil
}

func (c *client) request(path string, body []byte, req *llm.Request) *transport.Request {
	return &transport.Request{
		URL:            c.baseURL + path,
		Header:         c.header,
		Body:           body,
		IdempotencyKey: req.IdempotencyKey,
	}
}

// scrub removes the API key from text that will appear in an error.
func (c *client) scrub(s string) string {
	if c.apiKey == "" {
		return s
	}
	return redact.Values(s, c.apiKey)
}

// includeList is the Responses "include" field: reasoning.encrypted_content
// first when NoStore asks for it, then the caller's values, each once.
func includeList(noStore bool, extra []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(v string) {
		if v != "" && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	if noStore {
		add("reasoning.encrypted_content")
	}
	for _, v := range extra {
		add(v)
	}
	return out
}
