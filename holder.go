package actoviq

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"

	"github.com/actoviq/actoviq-go/store"
)

// A holder is "<hostname>:<pid>:<random>/<drive>" unless the user set
// Config.Holder. When a claim's holder is a process on this host that no
// longer exists (it was killed), waiting for its lease to expire only
// delays recovery: the dead process cannot write anything. The claim is
// then released with the dead holder's own fence, which fails if the claim
// moved on in the meantime, and taken over with a new epoch.

// deadLocalHolder reports whether holder names a process on this host that
// is certainly gone: it does not exist, or it is a zombie. Any doubt (another host, a live or unknown pid, a
// custom holder name) answers false: then the lease must expire.
func deadLocalHolder(holder string) bool {
	host, _ := os.Hostname()
	h := ParseHolder(holder)
	if h.PID <= 0 || host == "" || h.Host != host || h.PID == os.Getpid() {
		return false
	}
	return processGone(h.PID)
}

// signalGone checks existence only (signal 0), where /proc is missing.
func signalGone(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return errors.Is(err, os.ErrProcessDone) || errors.Is(err, syscall.ESRCH)
}

// releaseDead frees a claim held by a dead local process.
func (e *Runtime) releaseDead(ctx context.Context, key string, held *store.ClaimHeldError) bool {
	if !deadLocalHolder(held.Holder) {
		return false
	}
	err := e.store.ClaimRelease(ctx, &store.ClaimReleaseParams{Tenant: e.tenant,
		Fence: store.Fence{Key: key, Holder: held.Holder, Epoch: held.Epoch}})
	return err == nil
}

// driveSeq numbers the drives of this process.
var driveSeq atomic.Uint64

// driveHolder names one drive: the worker's holder, the runtime's instance
// token and a process-wide sequence number. Two drives are two holders
// whatever Config.NewID returns (a claim held by the same holder is
// renewed, not refused, so holder names must never collide): the sequence
// keeps drives of one process apart, the instance token (random, made by
// New) keeps runtimes that share a Config.Holder apart, in one process or
// many.
func (e *Runtime) driveHolder() string {
	return fmt.Sprintf("%s/%s.%d", e.holder, e.instance, driveSeq.Add(1))
}
