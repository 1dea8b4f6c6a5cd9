package store

import "context"

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
