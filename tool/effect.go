package tool

import "fmt"

// Effect declares what calling a tool does to the world. The zero value is
// [SideEffect], so a tool that declares nothing is treated as the most
// dangerous kind.
type Effect int

// The effects, from most to least dangerous.
const (
	// SideEffect: the call changes something and repeating it may change
	// it again (send an e-mail, charge a card). Never re-run on its own.
	SideEffect Effect = iota
	// IdempotentWrite: the call changes something, and repeating it with
	// the same idempotency key has no further effect.
	IdempotentWrite
	// Read: the call changes nothing.
	Read
)

// String returns "side-effect", "idempotent-write" or "read".
func (e Effect) String() string {
	switch e {
	case SideEffect:
		return "side-effect"
	case IdempotentWrite:
		return "idempotent-write"
	case Read:
		return "read"
	}
	return fmt.Sprintf("Effect(%d)", int(e))
}

// Valid reports whether e is one of the defined effects.
func (e Effect) Valid() bool { return e >= SideEffect && e <= Read }

// ParseEffect parses the text form of an effect.
func ParseEffect(s string) (Effect, error) {
	switch s {
	case "side-effect":
		return SideEffect, nil
	case "idempotent-write":
		return IdempotentWrite, nil
	case "read":
		return Read, nil
	}
	return SideEffect, fmt.Errorf("tool: unknown effect %q", s)
}

// MarshalText encodes the effect as its string form.
func (e Effect) MarshalText() ([]byte, error) {
	if !e.Valid() {
		return nil, fmt.Errorf("tool: invalid effect %d", int(e))
	}
	return []byte(e.String()), nil
}

// UnmarshalText decodes the string form; unknown text is an error.
func (e *Effect) UnmarshalText(b []byte) error {
	v, err := ParseEffect(string(b))
	if err != nil {
		return err
	}
	*e = v
	return nil
}
