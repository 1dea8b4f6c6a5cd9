package actoviq_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// The layering rules of docs/design.md#architecture, checked against the real import
// graph. A package may import module packages of a strictly lower layer
// only. A new package must be given a layer here before it can land.
const module = "github.com/actoviq/actoviq-go"

var layers = map[string]int{
	"item":                              0,
	"analysis/actoviqvet":               0, // matches on import paths; imports no module package
	"llm":                               1,
	"llm/transport":                     2, // reports with llm.Attempt and llm.StreamInterruptedError
	"tool":                              2,
	"approvals":                         2, // the approvals policy; imports no module package
	"llm/internal/wire":                 3,
	"store":                             3,
	"store/internal/groupcommit":        3, // the SQL stores' group-commit leader loop; imports no module package
	"store/internal/migrations":         3, // the SQL stores' migration file loader; imports no module package
	"store/internal/journal":            3, // the SQL stores' journal row format; imports no module package
	"store/internal/eventrow":           4, // the SQL stores' events row of several records
	"internal/killpoint":                3, // kill points inside the stores' writes, for the crash tests; imports no module package
	"llm/internal/wiretest":             4,
	"llm/internal/providertest":         4, // beside wiretest
	"llm/openai":                        5,
	"llm/anthropic":                     5,
	"llm/scripted":                      5,
	"tool/mcptool":                      5,
	"tool/httptool":                     5,
	"store/storemem":                    5,
	"store/storesqlite":                 5,
	"store/storepg":                     5,
	"store/storetest":                   5,
	"once":                              5,
	"internal/ledger":                   6,
	"internal/scaletest":                6,  // seeds large stores in SQL (tests and scripts/bench-scale)
	"internal/scaletest/benchscale":     10, // scripts/bench-scale's program
	"internal/scaletest/seed":           10, // a command that fills a store with a history copied from a run it holds
	"internal/redact":                   0,  // the one redactor: every package that hides a secret uses it; imports no module package
	"internal/handoff":                  -1, // the mark of a store write whose values the engine hands over (storemem keeps them uncopied); imports no module package
	"internal/toolrun":                  -1, // the engine's worker runs a call's tool on its own goroutine (tool.Runner asks the context for it); imports no module package
	"internal/jsonenc":                  -1, // JSON strings as encoding/json writes them, for the hand-written encoders of the hot path (item's too), and json.Valid in one pass; imports no module package
	"":                                  8,  // root package actoviq
	"otelsink":                          9,
	"otelmetrics":                       9, // OpenTelemetry metrics and the Prometheus endpoint
	"notify":                            9, // webhook notifier over the root's events
	"console":                           9,
	"internal/crashtest":                9,
	"tool/mcptool/internal/conformance": 9, // a command over mcptool and the root package
	"internal/cli":                      10,
	"internal/crashtest/campaign":       10, // the crash campaign's program (scripts/crash-campaign)
	"cmd/actoviq":                       11,
	"cmd/actoviq-vet":                   11,
}

// thirdParty says which module packages may import a third-party module:
// each library has one home.
var thirdParty = map[string][]string{
	"modernc.org/sqlite":                       {"store/storesqlite"},
	"github.com/jackc/pgx/v5":                  {"store/storepg", "internal/scaletest"}, // scaletest: PGPool, the one query helper of the seeding tools and tests
	"github.com/modelcontextprotocol/go-sdk":   {"tool/mcptool"},
	"golang.org/x/oauth2":                      {"tool/mcptool"}, // the MCP SDK's OAuth token types
	"github.com/spf13/cobra":                   {"internal/cli"},
	"go.opentelemetry.io/otel":                 {"otelsink", "otelmetrics"},
	"github.com/prometheus/client_golang":      {"otelmetrics"}, // the OpenTelemetry Prometheus exporter's registry and handler
	"github.com/santhosh-tekuri/jsonschema/v6": {"tool"},
	"github.com/google/jsonschema-go":          {"tool"},
	"pgregory.net/rapid":                       {"store/storetest"},
	"golang.org/x/tools":                       {"analysis/actoviqvet"},
}

// testOnlyThirdParty are libraries only tests use, in the tests of the
// packages listed (nil: any package's tests); no production package may
// import them.
var testOnlyThirdParty = map[string][]string{
	"github.com/chromedp/": {"console"}, // chromedp and its cdproto: the console's browser test
	"go.uber.org/goleak":   nil,         // any package's tests
}

// testOnly packages are helpers that production code never imports, with the
// exceptions listed (the CLI's demo and the crash campaign drive the
// scripted model on purpose).
var testOnly = map[string][]string{
	"store/storetest":       nil,
	"llm/internal/wiretest": nil,
	"llm/scripted":          {"internal/cli", "internal/crashtest/campaign"},

	"llm/internal/providertest": nil,
}

// engineBlind: the engine sees interfaces, never concrete providers or
// backends.
var concrete = []string{"llm/openai", "llm/anthropic", "llm/scripted", "tool/mcptool", "tool/httptool",
	"store/storemem", "store/storesqlite", "store/storepg"}

type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func rel(path string) (string, bool) {
	if path == module {
		return "", true
	}
	if r, ok := strings.CutPrefix(path, module+"/"); ok {
		return r, true
	}
	return "", false
}

func TestLayering(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 5 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	// Every package these rules name exists: a rule about a package that
	// is gone guards nothing.
	real := map[string]bool{}
	for _, p := range pkgs {
		r, _ := rel(p.ImportPath)
		real[r] = true
	}
	named := map[string]bool{}
	for p := range layers {
		named[p] = true
	}
	for p, allowed := range testOnly {
		named[p] = true
		for _, a := range allowed {
			named[a] = true
		}
	}
	for _, homes := range thirdParty {
		for _, h := range homes {
			named[h] = true
		}
	}
	for _, homes := range testOnlyThirdParty {
		for _, h := range homes {
			named[h] = true
		}
	}
	for _, p := range concrete {
		named[p] = true
	}
	for p := range named {
		if !real[p] {
			t.Errorf("deps_test.go names package %q, which does not exist: remove or rename it", p)
		}
	}
	for _, p := range pkgs {
		from, _ := rel(p.ImportPath)
		fromLayer, ok := layers[from]
		if !ok {
			t.Errorf("package %q has no layer in deps_test.go: give it one (and update the README layout)", from)
			continue
		}
		for _, imp := range append(p.TestImports, p.XTestImports...) {
			for lib, homes := range testOnlyThirdParty {
				if strings.HasPrefix(imp, lib) && homes != nil && !contains(homes, from) {
					t.Errorf("the tests of %q import %q: that test library lives only in the tests of %v", from, imp, homes)
				}
			}
		}
		for _, imp := range p.Imports {
			for lib := range testOnlyThirdParty {
				if strings.HasPrefix(imp, lib) {
					t.Errorf("production package %q imports %q, a library for tests only", from, imp)
				}
			}
			if to, ok := rel(imp); ok {
				toLayer, known := layers[to]
				if !known {
					continue // reported as the package itself
				}
				if toLayer >= fromLayer {
					t.Errorf("%q (layer %d) imports %q (layer %d): imports must go to a lower layer", from, fromLayer, to, toLayer)
				}
				if allowed, isTestOnly := testOnly[to]; isTestOnly && !contains(allowed, from) {
					t.Errorf("production package %q imports test helper %q", from, to)
				}
				if (from == "internal/ledger" || from == "") && contains(concrete, to) {
					t.Errorf("%q imports concrete implementation %q: it must see interfaces only", from, to)
				}
				if (from == "console" || from == "internal/cli") && strings.HasPrefix(to, "internal/") && to != "internal/redact" {
					t.Errorf("%q imports %q: operator surfaces use the public API only (and the one redactor)", from, to)
				}
				continue
			}
			if !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
				continue // standard library
			}
			home := ""
			for mod, homes := range thirdParty {
				if imp == mod || strings.HasPrefix(imp, mod+"/") {
					home = mod
					if !contains(homes, from) {
						t.Errorf("%q imports %q: that library lives only in %v", from, imp, homes)
					}
				}
			}
			if home == "" {
				t.Errorf("%q imports %q, which has no home package in deps_test.go", from, imp)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
