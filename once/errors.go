package once

import (
	"errors"
	"fmt"

	"github.com/actoviq/actoviq-go/store"
)

// DecodeError reports a recorded value that cannot be decoded into the type
// the caller asked for, usually because two call sites use one key with
// different result types. The record is left as it is and fn is not run.
type DecodeError struct {
	// Tenant and Key identify the record.
	Tenant, Key string
	// Type is the Go type the value was to be decoded into.
	Type string
	// Err is the decoding error.
	Err error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("once: key %q (tenant %q): recorded value does not decode into %s: %v", e.Key, e.Tenant, e.Type, e.Err)
}

// Unwrap returns the JSON decoding error.
func (e *DecodeError) Unwrap() error { return e.Err }

// ErrNotRecorded matches (errors.Is) the error [DoConfig] returns when fn
// ran and succeeded but its result could not be recorded: fn's effect
// exists, nothing in the store says so, and a later call runs fn again.
var ErrNotRecorded = errors.New("once: fn ran but its result was not recorded")

// NotRecordedError is the error [DoConfig] returns, beside fn's value, when
// fn ran and succeeded but the store did not record its result. It matches
// [ErrNotRecorded].
//
// Err is the store's error, except that a busy store's answer is not
// passed on as one: [store.ErrBusy] promises "nothing written, call again
// as is", and calling Do again here runs fn a second time. Such an error
// keeps its text but no longer matches store.ErrBusy; Busy says it was one.
type NotRecordedError struct {
	// Tenant and Key identify the record that was not written.
	Tenant, Key string
	// Busy reports that the store stayed busy for the whole write budget.
	Busy bool
	// Err is the store's error (see above for a busy store's).
	Err error
}

func (e *NotRecordedError) Error() string {
	return fmt.Sprintf("once: key %q (tenant %q): fn ran but its result was not recorded (a later call runs fn again): %v", e.Key, e.Tenant, e.Err)
}

// Unwrap returns the store's error.
func (e *NotRecordedError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrNotRecorded].
func (e *NotRecordedError) Is(target error) bool { return target == ErrNotRecorded }

// notRecorded builds the NotRecordedError of err.
func notRecorded(tenant, key string, err error) *NotRecordedError {
	e := &NotRecordedError{Tenant: tenant, Key: key, Err: err}
	if errors.Is(err, store.ErrBusy) {
		e.Busy, e.Err = true, errors.New(err.Error())
	}
	return e
}
