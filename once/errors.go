package once

import "fmt"

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
