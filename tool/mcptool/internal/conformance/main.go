package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/actoviq/actoviq-go/tool"
	"github.com/actoviq/actoviq-go/tool/mcptool"
)

const server = "conf"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: conformance <server-url> (with MCP_CONFORMANCE_SCENARIO set)")
		os.Exit(2)
	}
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	if scenario == "" {
		fmt.Fprintln(os.Stderr, "conformance: MCP_CONFORMANCE_SCENARIO is not set")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := run(ctx, os.Args[1], scenario, os.Getenv("MCP_CONFORMANCE_CONTEXT")); err != nil {
		fmt.Fprintf(os.Stderr, "conformance: scenario %s: %v\n", scenario, err)
		os.Exit(1)
	}
}

// scenarioContext is what MCP_CONFORMANCE_CONTEXT may carry.
type scenarioContext struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	PrivateKey   string `json:"private_key_pem"`
	Algorithm    string `json:"signing_algorithm"`
}

// call is one tool call a scenario makes.
type call struct {
	tool string
	args string
}

func run(ctx context.Context, url, scenario, rawContext string) error {
	var sc scenarioContext
	if rawContext != "" {
		if err := json.Unmarshal([]byte(rawContext), &sc); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	env := map[string]string{}
	srv := map[string]any{"type": "http", "url": url}
	var calls []call
	switch {
	case scenario == "initialize":
	case scenario == "tools_call":
		calls = []call{{"add_numbers", `{"a":5,"b":3}`}}
	case scenario == "elicitation-sep1034-client-defaults":
		calls = []call{{"test_client_elicitation_defaults", `{}`}}
	case scenario == "sse-retry":
		calls = []call{{"test_reconnection", `{}`}}
	case strings.HasPrefix(scenario, "auth/"):
		oauth := map[string]any{
			// Where the authorization server supports client ID
			// metadata documents, this URL is the client id.
			"clientMetadataUrl": "https://conformance-test.local/client-metadata.json",
		}
		if sc.ClientID != "" {
			oauth["clientId"] = sc.ClientID
			if sc.ClientSecret != "" {
				// As a user would: the secret stays out of the file.
				oauth["clientSecret"] = "${CONF_CLIENT_SECRET}"
				env["CONF_CLIENT_SECRET"] = sc.ClientSecret
			}
		}
		if strings.HasPrefix(scenario, "auth/client-credentials-") {
			oauth["grant"] = mcptool.GrantClientCredentials
			delete(oauth, "clientMetadataUrl")
			if sc.PrivateKey != "" {
				oauth["privateKey"] = "${CONF_PRIVATE_KEY}"
				env["CONF_PRIVATE_KEY"] = sc.PrivateKey
				oauth["signingAlgorithm"] = sc.Algorithm
			}
		}
		srv["oauth"] = oauth
		calls = []call{{"test-tool", `{}`}}
	default:
		return fmt.Errorf("unknown scenario")
	}
	file, err := json.Marshal(map[string]any{"mcpServers": map[string]any{server: srv}})
	if err != nil {
		return err
	}
	cfg, err := mcptool.ParseConfig(file)
	if err != nil {
		return err
	}
	src, err := mcptool.New(cfg, &mcptool.Options{
		ClientName:    "actoviq-conformance",
		ClientVersion: "1",
		LookupEnv: func(name string) (string, bool) {
			v, ok := env[name]
			return v, ok
		},
		OAuth: &mcptool.OAuthOptions{
			Tokens:       &mcptool.MemoryTokenStore{},
			OpenURL:      browse,
			LoginTimeout: 10 * time.Second,
		},
		Elicit: acceptDefaults,
		// scripts/mcp-conformance runs the suite once as users run it
		// (2026-07-28 first, then the fallback) and once pinned to an
		// older protocol version.
		ProtocolVersion: os.Getenv("ACTOVIQ_MCP_PROTOCOL"),
	})
	if err != nil {
		return err
	}
	defer src.Close()
	tools, err := src.Tools(ctx)
	if err != nil {
		return err
	}
	runner, err := tool.NewRunner(tools, nil)
	if err != nil {
		return err
	}
	for i, c := range calls {
		res, err := runner.Run(ctx, &tool.Call{Name: mcptool.QualifiedName(server, c.tool), Args: json.RawMessage(c.args),
			Key: fmt.Sprintf("conformance:c%d", i+1), Approved: true})
		if err != nil {
			return fmt.Errorf("call %s: %w", c.tool, err)
		}
		if res.IsError {
			return fmt.Errorf("call %s: the tool answered an error: %s", c.tool, res.Content)
		}
		fmt.Printf("%s: %s\n", c.tool, res.Content)
	}
	return nil
}

// browse plays the person at the browser: it opens the authorization URL
// and follows the authorization server's redirect back to the Source's
// loopback listener.
func browse(ctx context.Context, _ string, authURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return errors.New("the sign-in page answered " + resp.Status)
	}
	return nil
}

// acceptDefaults plays the person who answers an elicitation by accepting
// every field's default.
func acceptDefaults(context.Context, *mcptool.ElicitRequest) (*mcptool.ElicitResult, error) {
	return &mcptool.ElicitResult{Action: mcptool.ElicitAccept}, nil
}
