package storesqlite

import (
	"reflect"

	"github.com/actoviq/actoviq-go/store"
)

// validate checks a params struct before any storage is touched. Params
// with a Validate method (the store package's shared rules) use it; the
// read-only params that have none yet get the same basic checks here, so
// every method refuses bad input with a [*store.InvalidError].
func validate(p any) error {
	if p == nil || reflect.ValueOf(p).IsNil() {
		return &store.InvalidError{Field: "params", Reason: "nil"}
	}
	if v, ok := p.(interface{ Validate() error }); ok {
		return v.Validate()
	}
	need := func(pairs ...string) error {
		for i := 0; i < len(pairs); i += 2 {
			if pairs[i+1] == "" {
				return &store.InvalidError{Field: pairs[i], Reason: "empty"}
			}
		}
		return nil
	}
	switch p := p.(type) {
	case *store.ClaimGetParams:
		return need("Tenant", p.Tenant, "Key", p.Key)
	case *store.EventListParams:
		if p.AfterSeq < 0 {
			return &store.InvalidError{Field: "AfterSeq", Reason: "negative"}
		}
		if p.Limit < 0 {
			return &store.InvalidError{Field: "Limit", Reason: "negative"}
		}
		return need("Tenant", p.Tenant, "RunID", p.RunID)
	case *store.LedgerGetParams:
		return need("Tenant", p.Tenant, "RunID", p.RunID, "CallID", p.CallID)
	case *store.LedgerListParams:
		return need("Tenant", p.Tenant, "RunID", p.RunID)
	case *store.OnceGetParams:
		return need("Tenant", p.Tenant, "Key", p.Key)
	case *store.RunGetParams:
		return need("Tenant", p.Tenant, "ID", p.ID)
	case *store.RunListParams:
		if p.Status != "" && !p.Status.Valid() {
			return &store.InvalidError{Field: "Status", Reason: "unknown status " + string(p.Status)}
		}
		if p.Limit < 0 {
			return &store.InvalidError{Field: "Limit", Reason: "negative"}
		}
		return need("Tenant", p.Tenant)
	case *store.SessionLoadParams:
		return need("Tenant", p.Tenant, "SessionID", p.SessionID)
	}
	return nil
}
