package actoviqvet_test

import (
	"testing"

	"github.com/actoviq/actoviq-go/analysis/actoviqvet"
	"golang.org/x/tools/go/analysis/analysistest"
)

// testdata/src/a holds each mistake and its correct form; every report is
// named by a `// want` comment, and a report that is not wanted fails.
func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), actoviqvet.Analyzer, "a")
}
