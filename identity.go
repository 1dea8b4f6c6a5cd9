package actoviq

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/actoviq/actoviq-go/store"
)

// A runtime's default holder is "<host>:<pid>:<start>.<random>", where
// start is the process start time (UTC, 20060102T150405Z): every claim a
// runtime or a worker takes names the machine, the process and when it
// started, and a drive adds "/<drive>" to it. Holders set through
// Config.Holder are kept as they are.

var processStart = time.Now().UTC()

const holderTimeLayout = "20060102T150405Z"

func defaultHolder() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d:%s.%s", host, os.Getpid(), processStart.Format(holderTimeLayout), randomID()[:8])
}

// HolderInfo is a claim holder's identity as [ParseHolder] reads it.
type HolderInfo struct {
	// Holder is the full holder string.
	Holder string `json:"holder"`
	// Host, PID and Started identify the worker process; they are zero
	// for a holder name that does not follow the default format.
	Host    string    `json:"host,omitempty"`
	PID     int       `json:"pid,omitempty"`
	Started time.Time `json:"started,omitzero"`
	// Drive names one drive of a run within that process.
	Drive string `json:"drive,omitempty"`
}

// ParseHolder reads the identity in a claim holder made by a runtime's
// default [Config.Holder]. Other names come back with only Holder set.
func ParseHolder(holder string) HolderInfo {
	info := HolderInfo{Holder: holder}
	base, drive, _ := strings.Cut(holder, "/")
	parts := strings.SplitN(base, ":", 3)
	if len(parts) != 3 {
		return info
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil {
		return info
	}
	info.Host, info.PID, info.Drive = parts[0], pid, drive
	if stamp, _, ok := strings.Cut(parts[2], "."); ok {
		if t, err := time.Parse(holderTimeLayout, stamp); err == nil {
			info.Started = t
		}
	}
	return info
}

// String is "host pid N started T" or the raw holder.
func (h HolderInfo) String() string {
	if h.Host == "" {
		return h.Holder
	}
	s := fmt.Sprintf("%s pid %d", h.Host, h.PID)
	if !h.Started.IsZero() {
		s += " started " + h.Started.Format(time.RFC3339)
	}
	return s
}

// Holder returns the runtime's holder name ([Config.Holder] or the
// default); each drive's claim adds "/<drive>" to it.
func (e *Runtime) Holder() string { return e.holder }

// RunClaim is who holds a run's claim, as [Runtime.RunHolder] reads it.
type RunClaim struct {
	HolderInfo
	// Epoch is the claim's fencing token.
	Epoch int64 `json:"epoch"`
	// ExpiresAt is when the lease ends without a heartbeat (store clock).
	ExpiresAt time.Time `json:"expires_at"`
	// Live is false when the claim expired or was released, or its holder
	// is a process on this host that is gone (or a zombie): nobody drives
	// the run now.
	Live bool `json:"live"`
	// Dead reports a holder on this host whose process is gone.
	Dead bool `json:"dead,omitempty"`
}

// RunHolder reads the claim of a run: the worker driving it (or that drove
// it last) with its epoch. A run that was never claimed has none (nil, nil).
func (e *Runtime) RunHolder(ctx context.Context, runID string) (*RunClaim, error) {
	c, err := e.store.ClaimGet(ctx, &store.ClaimGetParams{Tenant: e.tenant, Key: store.RunClaimKey(runID)})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("actoviq: claim of run %s: %w", runID, err)
	}
	return e.runClaim(c), nil
}
