// Command conformance is the client that the official MCP conformance suite
// (npm @modelcontextprotocol/conformance) drives: scripts/mcp-conformance
// builds it and runs every client scenario against it, and against the Go
// SDK's own conformance client as the reference.
//
// The suite starts a test server per scenario and runs
//
//	conformance <server-url>
//
// with the scenario's name in MCP_CONFORMANCE_SCENARIO and, for some
// scenarios, JSON in MCP_CONFORMANCE_CONTEXT (client credentials). The
// command uses tool/mcptool the way a user does: it writes an mcpServers
// configuration for the server (with an "oauth" block for the auth
// scenarios, the client secret passed as "${NAME}"), parses it with
// mcptool.ParseConfig, discovers the tools with a Source and calls them
// through a tool.Runner. The person who signs in is played by an HTTP client
// that opens the authorization URL and follows its redirect to the Source's
// loopback listener; the person who answers an elicitation accepts every
// default.
package main
