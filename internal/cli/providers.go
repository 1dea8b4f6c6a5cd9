package cli

import (
	"errors"

	"github.com/actoviq/actoviq-go/llm"
	"github.com/actoviq/actoviq-go/llm/anthropic"
	"github.com/actoviq/actoviq-go/llm/openai"
	"github.com/actoviq/actoviq-go/llm/scripted"
	"github.com/actoviq/actoviq-go/llm/transport"
)

// provider builds the model provider. API keys come from the environment
// (OPENAI_API_KEY, ANTHROPIC_API_KEY) and are never stored with a run.
func (e *env) provider(c *runConfig) (llm.Provider, error) {
	switch c.Provider {
	case "scripted":
		p, err := scripted.Load(c.Model)
		if err != nil {
			return nil, usageErr("--model scripted:%s: %v", c.Model, err)
		}
		return p, nil
	case "openai", "openai-responses":
		cfg := &openai.Config{APIKey: e.getenv("OPENAI_API_KEY"), APIKeySource: "OPENAI_API_KEY", BaseURL: c.BaseURL, NoStreaming: c.NoStream, Options: transport.Options{MaxRetries: c.MaxRetries}}
		if cfg.BaseURL == "" {
			cfg.BaseURL = e.getenv("OPENAI_BASE_URL")
		}
		cfg.NoStore = c.OpenAINoStore
		var p llm.Provider
		var err error
		if c.Provider == "openai" {
			p, err = openai.NewChat(cfg)
		} else {
			p, err = openai.NewResponses(cfg)
		}
		if errors.Is(err, openai.ErrMissingAPIKey) {
			return nil, usageErr("no OpenAI API key: set OPENAI_API_KEY, or point --base-url (or OPENAI_BASE_URL) at a server that needs none")
		}
		if err != nil {
			return nil, usageErr("%v", err)
		}
		return p, nil
	case "anthropic":
		cfg := &anthropic.Config{APIKey: e.getenv("ANTHROPIC_API_KEY"), APIKeySource: "ANTHROPIC_API_KEY", BaseURL: c.BaseURL, NoStreaming: c.NoStream, Options: transport.Options{MaxRetries: c.MaxRetries}}
		if cfg.BaseURL == "" {
			cfg.BaseURL = e.getenv("ANTHROPIC_BASE_URL")
		}
		p, err := anthropic.New(cfg)
		if errors.Is(err, anthropic.ErrMissingAPIKey) {
			return nil, usageErr("no Anthropic API key: set ANTHROPIC_API_KEY, or point --base-url (or ANTHROPIC_BASE_URL) at a server that needs none")
		}
		if err != nil {
			return nil, usageErr("%v", err)
		}
		return p, nil
	}
	return nil, usageErr("unknown provider %q", c.Provider)
}
