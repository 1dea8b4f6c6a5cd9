// Package notify tells people when something waits for them: a
// [Notifier] POSTs a small signed JSON [Item] to a webhook each time
// something enters the inbox (a call that waits for approval, a side
// effect of unknown outcome waiting for reconciliation, a started call
// waiting for a recovery decision, a provider outage, a stalled run, an
// approval escalated past its deadline).
//
// # What is sent
//
// One POST per item, Content-Type application/json, body an [Item]:
//
//	{"schema":1,"id":"9f2c…","kind":"approval","run_id":"r-42","call_id":"c1",
//	 "tool":"pay","effect":"side-effect","reason":"the call needs approval before it starts",
//	 "at":"2026-12-01T23:59:00Z","link":"https://console.example/runs/r-42"}
//
// It names the run, the call and the kind, and links to the console; it
// never carries arguments or results (open the link for those: the console
// shows them redacted). Two headers go with it: [SignatureHeader], a
// timestamped HMAC-SHA256 of the body keyed with [Config].Secret, which a
// receiver checks with [Verify] (constant-time, and refusing a timestamp
// more than five minutes away, so a captured request cannot be replayed
// later); and [DeliveryHeader], the item's id, identical on every retry.
//
// # Delivery
//
// [Notifier.Emit] (the [actoviq.EventSink] method) and [Notifier.Notify]
// only queue: a bounded queue, drained by a few goroutines. A run never
// waits for the webhook; when the queue is full the item is dropped and
// counted ([Stats].Dropped), never waited for. A delivery that gets 408,
// 425, 429, 5xx or a transport error is retried with exponential backoff
// and jitter (a longer Retry-After wins), up to [Config].MaxAttempts; any
// other status is final. The receiver may still see an item twice (a 2xx
// lost on the way back is retried): deduplicate on [DeliveryHeader].
//
// # Deduplication
//
// One item is sent once per notifier: its id derives from kind, run, call,
// attempt and, for a stalled run, the stale claim's epoch. Resuming a run
// that stops again on the same open question sends nothing new; a new
// attempt of the call that stops again is a new item; a provider
// interruption is new at every drive that hits it. The ids remembered are
// bounded ([Config].Remember) and live in memory: a restarted process may
// send an item again.
//
// # Stalled runs
//
// No event says a worker died. [Notifier.Watch] polls a list function (the
// command line lists the stalled runs of the store) and queues what it
// finds; run one watcher per store.
//
// # Known limits
//
// Items queued but not delivered when the process stops, or when
// [Notifier.Close] is called, are lost: the notifier is a signal, not the
// record; the inbox is the record.
package notify
