// Package wiretest holds the test helpers the provider adapters share: a
// fake provider server on 127.0.0.1 that records requests and answers from
// fixtures, golden request files, and a clock that never sleeps. Tests
// only.
package wiretest
