package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// validateJSON validates raw against sch and returns every violation, each
// as "<instance location>: <message>". A nil result means valid.
func validateJSON(sch *jsonschema.Schema, raw json.RawMessage) []string {
	v, err := decodeInstance(raw)
	if err != nil {
		if _, err = jsonschema.UnmarshalJSON(bytes.NewReader(raw)); err == nil {
			err = errInvalid
		}
		return []string{fmt.Sprintf("not valid JSON: %v", err)}
	}
	err = sch.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{err.Error()}
	}
	var out []string
	var walk func(u *jsonschema.OutputUnit)
	walk = func(u *jsonschema.OutputUnit) {
		if len(u.Errors) == 0 {
			if u.Error != nil {
				loc := u.InstanceLocation
				if loc == "" {
					loc = "/"
				}
				out = append(out, fmt.Sprintf("%s: %s", loc, u.Error))
			}
			return
		}
		for i := range u.Errors {
			walk(&u.Errors[i])
		}
	}
	walk(ve.DetailedOutput())
	if len(out) == 0 {
		out = []string{ve.Error()}
	}
	sort.Strings(out)
	return out
}
