package store

import (
	"context"
	"time"
)

// QueueNotifier is an optional interface of a [Store] that can wake idle
// workers when a run becomes queued ([RunCreateParams] with status queued,
// or a [RunWriteParams] that moves a run to queued), in this process or in
// any other. Workers find it by type assertion. The fallback, for a store
// without it (and for runs that become claimable because a lease expired,
// which nothing announces), is polling [Store.RunClaimNext].
type QueueNotifier interface {
	// QueueWatch returns a channel that is closed at the first notification
	// for tenant after QueueWatch returned. A notification may be spurious,
	// and one can be lost (a dropped connection): callers poll as well, and
	// select on their own context. ctx bounds only setting up the watch.
	QueueWatch(ctx context.Context, tenant string) (<-chan struct{}, error)
}

// WaitingStamper is an optional interface of a [Store] that tells cheaply
// whether what waits for a person (the inbox: interrupted and running
// runs, their claims) may have changed, so that a live inbox recomputes
// its page only then. Consoles find it by type assertion; without it they
// recompute on every tick.
type WaitingStamper interface {
	// WaitingStamp returns a short value that changes when a run becomes
	// or stops being interrupted or running, or changes its wait kind;
	// when a waiting run's row is written; when a claim of the tenant is
	// taken, extended or released; and when a live claim expires (judged
	// at now). A write of a waiting run's ledger alone (a Decide) is seen
	// through the run's claim, which the writer takes and releases: a
	// run's claim released moves the stamp, also when it was taken since
	// the last stamp and longer claims stay live. It costs a few index
	// probes and counter rows, plus the claims that expired without a
	// release (stalled drives), whatever else the store holds: not the
	// live claims of a fleet, nor the history. Equal stamps mean nothing
	// of the above happened, with exceptions a caller must allow for by
	// recomputing now and then anyway: a claim extended to an expiry
	// short of the tenant's latest; a claim whose key is not a run's
	// (store.RunClaimKey) taken or released between the tenant's earliest
	// live and latest expiry; a waiting run's row written, its status and
	// wait kind unchanged, at a time (the writer's clock) not after the
	// newest waiting run's last write.
	WaitingStamp(ctx context.Context, tenant string, now time.Time) (string, error)
}
