// Command actoviq-vet reports common mistakes in code that defines actoviq
// tools: a tool without an explicit effect, a side-effect tool that never
// reads its idempotency key, and an HTTP request from a side-effect tool
// without an Idempotency-Key header. See package
// github.com/actoviq/actoviq-go/analysis/actoviqvet.
//
//	actoviq-vet ./...
//	go vet -vettool=$(which actoviq-vet) ./...
package main

import "github.com/actoviq/actoviq-go/analysis/actoviqvet"

func main() { actoviqvet.Main() }
