package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"os"
	"strings"

	"github.com/actoviq/actoviq-go/internal/redact"
	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/internal/wire"
	"github.com/actoviq/actoviq-go/llm/transport"
)

// Messages is the Messages API adapter (POST {BaseURL}/v1/messages). It is
// safe for concurrent use.
type Messages struct {
	name      string
	apiKey    string
	keySource string
	url       string
	header    http.Header
	models    map[string]llm.Capabilities
	maxTokens int
	thinking  int
	noStream  bool
	tcfg      transport.Config
	tr        *transport.Client
}

var _ llm.Provider = (*Messages)(nil)

// New returns a Messages provider. cfg may be nil; it is copied.
func New(cfg *Config) (*Messages, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	c := *cfg
	if c.BaseURL == "" {
		c.BaseURL = os.Getenv("ANTHROPIC_BASE_URL")
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
	if c.NoAuth {
		c.APIKey = ""
	} else if c.APIKey == "" {
		c.APIKey = os.Getenv("ANTHROPIC_API_KEY")
		if c.APIKeySource == "" {
			source = "ANTHROPIC_API_KEY"
		}
	}
	if c.APIKey == "" && !c.NoAuth && isAnthropicHost(c.BaseURL) {
		return nil, ErrMissingAPIKey
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = DefaultMaxTokens
	}
	h := http.Header{}
	for k, vs := range c.Header {
		h[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	h.Set("Content-Type", "application/json")
	h.Set("Anthropic-Version", Version)
	if c.APIKey != "" {
		h.Set("X-Api-Key", c.APIKey)
	}
	m := &Messages{
		name:      "anthropic",
		apiKey:    c.APIKey,
		keySource: source,
		url:       strings.TrimRight(c.BaseURL, "/") + "/v1/messages",
		header:    h,
		models:    map[string]llm.Capabilities{},
		maxTokens: c.MaxTokens,
		thinking:  c.ThinkingBudget,
		noStream:  c.NoStreaming,
		tcfg:      transport.Config{Options: c.Options},
	}
	for k, v := range c.Models {
		m.models[k] = v
	}
	if c.APIKey != "" {
		m.tcfg.Redact = []string{c.APIKey}
	}
	tr, err := transport.New(&m.tcfg)
	if err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	m.tr = tr
	return m, nil
}

// Name implements llm.Provider: "anthropic".
func (p *Messages) Name() string { return p.name }

// Capabilities implements llm.Provider; see DefaultCapabilities.
func (p *Messages) Capabilities(model string) llm.Capabilities {
	caps, ok := p.models[model]
	if !ok {
		caps = DefaultCapabilities
		caps.Reasoning = p.thinking > 0
	}
	caps.StructuredOutput = false
	if p.noStream {
		caps.Streaming = false
	}
	return caps
}

func (p *Messages) scrub(s string) string {
	if p.apiKey == "" {
		return s
	}
	return redact.Values(s, p.apiKey)
}

func (p *Messages) prepare(req *llm.Request, stream bool) (*transport.Request, error) {
	if err := wire.Check(p.name, p.Capabilities(modelOf(req)), req, stream); err != nil {
		return nil, err
	}
	body, err := p.body(req, stream)
	if err != nil {
		return nil, fmt.Errorf("%s: encode request: %w", p.name, err)
	}
	return &transport.Request{URL: p.url, Header: p.header, Body: body, IdempotencyKey: req.IdempotencyKey}, nil
}

// Generate implements llm.Provider with one non-streaming call.
func (p *Messages) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	treq, err := p.prepare(req, false)
	if err != nil {
		return nil, err
	}
	resp, err := p.tr.Do(ctx, treq)
	if err != nil {
		return nil, p.providerError(err)
	}
	defer resp.Body.Close()
	rid := resp.Header.Get("Request-Id")
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, &llm.ProviderError{Provider: p.name, Status: resp.StatusCode, RequestID: rid,
			Message: "reading the response body failed", Err: err}
	}
	var mr message
	if err := json.Unmarshal(b, &mr); err != nil {
		return nil, &llm.ProviderError{Provider: p.name, Status: resp.StatusCode, RequestID: rid,
			Message: "the response is not a message", Err: err}
	}
	return p.response(&mr)
}

// Stream implements llm.Provider: message_start … message_stop, with ping
// events ignored wherever they appear, tool input fragments joined and
// parsed once at content_block_stop, and an "error" event classified by
// its type (overloaded_error as 529).
func (p *Messages) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	treq, err := p.prepare(req, true)
	if err != nil {
		return func(yield func(llm.StreamEvent, error) bool) { yield(llm.StreamEvent{}, err) }
	}
	treq.ErrorEvent = errorEvent
	return func(yield func(llm.StreamEvent, error) bool) {
		st := &wire.Streamer{Provider: p.name, Config: p.tcfg, Classify: p.providerError, Scrub: p.scrub}
		st.Stream(ctx, treq, newAcc(p.name))(yield)
	}
}

func modelOf(req *llm.Request) string {
	if req == nil {
		return ""
	}
	return req.Model
}
