// Command actoviq runs LLM agents whose tool calls have real consequences,
// and lets operators inspect runs, record decisions and resume them.
//
//	go install github.com/actoviq/actoviq-go/cmd/actoviq@latest
//	actoviq demo
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/actoviq/actoviq-go/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
