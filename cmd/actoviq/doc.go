// Command actoviq runs LLM agents whose tool calls have real consequences,
// and lets operators inspect runs, record decisions and resume them.
//
// The module is not published yet; install it from a checkout:
//
//	go install ./cmd/actoviq
//	actoviq demo
//	actoviq run --model openai:gpt-4.1 --mcp-config mcp.json "..."
//	actoviq runs list --status interrupted
//	actoviq approve RUN CALL; actoviq resume RUN
//	actoviq audit export --since 24h > audit.jsonl
//
// Exit codes: 0 completed, 3 interrupted (a decision is needed), 1 failed
// or cancelled, 2 usage or configuration error, 4 another live process
// drives the run, 5 a signal stopped the command (the run is resumable). `actoviq help` lists every
// command and flag; the commands live in internal/cli.
package main
