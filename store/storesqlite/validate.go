package storesqlite

import "github.com/actoviq/actoviq-go/store"

// validate checks a params struct before any storage is touched, with the
// store package's shared rules.
func validate(p store.Validator) error { return store.Check(p) }
