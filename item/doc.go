// Package item defines the canonical, provider-neutral transcript of an agent run.
//
// An [Item] is a tagged union: its Type says which one variant field is set.
// Every item survives a JSON round trip: decoding what [Item.MarshalJSON]
// produced yields an equal item, and encoding that again yields the same
// bytes. Opaque provider values (reasoning signatures, encrypted content) are
// kept byte for byte as base64 and are never interpreted.
//
// Decoding is strict. An unknown type is rejected with an [*UnknownTypeError]
// (matching [ErrUnknownType]) and never silently turned into text; an item
// whose payload does not match its type is rejected with an [*InvalidError]
// (matching [ErrInvalid]). Anything a provider sends that has no canonical
// form travels as a [TypeRaw] item, tagged with the provider's name.
//
// This package uses the standard library only.
package item
