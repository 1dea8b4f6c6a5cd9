// Package killpoint names instants inside the stores' own writes (between
// the statements of one transaction) where the crash tests kill the
// process. It does nothing unless a test process arms it.
//
// A process is armed by the environment variable ACTOVIQ_KILLPOINT set to
// "name" or "name:n": the n-th time (default 1) the code reaches the
// point named name, the process sends itself SIGKILL. The crash campaign
// (internal/crashtest/campaign) arms its children this way, so a kill
// lands inside the journal write or inside a compaction, not only
// between store calls.
package killpoint

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// Points the stores reach.
const (
	// JournalWrite is inside a run write, after its log record was
	// written and before the transaction commits.
	JournalWrite = "journal-write"
	// EventRowWrite is inside a run write, after its one events row of
	// several records (the model response with its prepared calls) was
	// written and before the transaction commits.
	EventRowWrite = "event-row-write"
	// Compaction is inside a compaction, after the merged rows were
	// deleted and before the merged row is written.
	Compaction = "compaction"
	// CompactionCommit is inside a compaction, after the merged row was
	// written and before the transaction commits.
	CompactionCommit = "compaction-commit"
)

var (
	armed = parse(os.Getenv("ACTOVIQ_KILLPOINT"))
	hits  atomic.Int64
)

// CompactEvery is the number of log rows of a run after which the stores
// compact them (16). ACTOVIQ_COMPACT_EVERY sets it in a test process, so
// that the short runs of the crash campaign compact too.
var CompactEvery = envInt("ACTOVIQ_COMPACT_EVERY", 16)

func envInt(name string, def int64) int64 {
	if n, err := strconv.ParseInt(os.Getenv(name), 10, 64); err == nil && n >= 2 {
		return n
	}
	return def
}

type arm struct {
	name string
	n    int64
}

func parse(v string) *arm {
	if v == "" {
		return nil
	}
	name, count, ok := strings.Cut(v, ":")
	a := &arm{name: name, n: 1}
	if ok {
		if n, err := strconv.ParseInt(count, 10, 64); err == nil && n > 0 {
			a.n = n
		}
	}
	return a
}

// Reached marks that the code reached point name; it kills the process if
// the process was armed for this hit of it.
func Reached(name string) {
	a := armed
	if a == nil || a.name != name {
		return
	}
	if hits.Add(1) == a.n {
		kill()
	}
}
