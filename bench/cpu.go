package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// pgDataDir is the -pg-data flag: the data directory of the PostgreSQL
// server of -pg when it runs on this machine, so that the fleet pass can
// report the server's CPU per call beside the throughput.
var pgDataDir string

// clkTck is USER_HZ, the unit of utime and stime in /proc/PID/stat (100
// on Linux whatever the kernel's HZ).
const clkTck = 100

// serverCPU returns the CPU time (user and system) used so far by the
// PostgreSQL server whose data directory is dir: its postmaster and the
// postmaster's children (backends, WAL writer, checkpointer, ...), read
// from /proc. ok is false when it cannot be read (no such server here, not
// Linux). A backend that exited between two readings takes its CPU time
// with it; the bench's pools keep theirs open.
func serverCPU(dir string) (d time.Duration, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return 0, false
	}
	pm := strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	var ticks int64
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		st, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(st)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || i+2 > len(s) {
			continue
		}
		f := strings.Fields(s[i+2:]) // from field 3 (state): f[1] ppid, f[11] utime, f[12] stime
		if len(f) < 13 || (f[1] != pm && e.Name() != pm) {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		k, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + k
	}
	return time.Duration(ticks) * time.Second / clkTck, true
}
