// Package once runs a function with side effects under a key and records its
// first successful result durably, so that later callers with the same key
// get that result instead of running the function again. It makes the effect
// happen effectively once only where the target system dedupes on the key;
// the window below says why.
//
// [Do] and [DoConfig] combine two store records: a claim ("once:"+key) that
// lets only one caller at a time, in this process or any other process on the
// same store, run fn for a key; and a once record that holds fn's first
// successful result, JSON-encoded. A caller that finds the record returns it
// without running fn. A caller that finds the claim held waits and looks
// again. An error from fn records nothing, so a later call runs fn again.
//
// # The window, stated honestly
//
// The record and fn's effect on another system are not one transaction; no
// helper can make them one. If the process dies after fn's effect happened
// and before the record committed (fn is still running, or it returned and
// the write is in flight), nothing says the effect happened. Once the dead
// caller's lease expires (Config.LeaseTTL) the next caller runs fn again for
// the same key. The package tests include one that kills a process at that
// point and shows fn running twice. The same holds, without a crash, when
// the store cannot take the record after fn succeeded (it stayed busy for
// 10 s, the disk is full): Do returns fn's value with a [*NotRecordedError]
// (matching [ErrNotRecorded]), and a later call runs fn again.
//
// So the result is effectively once only where the target dedupes on the key:
//
//   - Pass the key to the target system as its idempotency key (a payment
//     API's Idempotency-Key header, a unique request id, a conditional
//     write). When fn runs again after a crash, the target answers the repeat
//     with the first outcome instead of acting twice.
//   - When the effect is a write to the same SQL database as the store, use
//     storesqlite.OnceTx or storepg.OnceTx instead of this package: they
//     commit the once record in the caller's transaction, so the record and
//     the effect commit together or not at all.
//   - Otherwise, treat a repeat as possible and make fn safe to repeat.
//
// While fn runs, its lease is renewed every LeaseTTL/3, so a slow fn does not
// let another caller in. If a renewal fails (the store was unreachable for
// longer than the lease), another caller may run fn concurrently; the first
// result recorded wins and both callers return it.
package once
