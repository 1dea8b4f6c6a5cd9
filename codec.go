package actoviq

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Codec seals values the runtime must keep at rest but may not store in
// clear: the arguments of a tool call that held secrets (docs/design.md#the-ledger). The
// runtime seals them when the model's response is committed, in the same
// write as the call's ledger entry, and opens them in whichever process
// runs the call, for instance a resume after a crash or a re-execute
// decision taken from the command line. aad binds a sealed value to its
// call (tenant, run, call id and the digest of the arguments), so a value
// copied to another call does not open.
//
// Without a codec (Config.Codec nil), such arguments live only in the
// memory of the runtime that received them: that runtime runs the call
// (also after an approval), and any other process stops with an
// interruption that says why instead of running it.
//
// [NewSealCodec] is the codec this package ships; an implementation backed
// by a key-management service fits the same interface.
type Codec interface {
	// Seal encrypts plaintext bound to aad (the call's identity) into a
	// printable string that is safe to store.
	Seal(plaintext, aad []byte) (string, error)
	// Open decrypts what Seal returned, given the same aad; a value it
	// cannot open is an error (wrap [ErrSealKey] for a missing key).
	Open(sealed string, aad []byte) ([]byte, error)
}

// sealPrefix starts every value [SealCodec] seals: version 1 of the
// format "v1.<key id>.<base64url(nonce ‖ ciphertext ‖ tag)>".
const sealPrefix = "v1."

// SealCodec is AES-256-GCM from the standard library under keys the user
// supplies.
//
// Format: "v1.<key id>.<data>", where key id is the first 8 bytes of the
// SHA-256 of the key in hex (it names the key without revealing it) and
// data is the unpadded base64url of a random 12-byte nonce followed by the
// GCM ciphertext and tag. The associated data (see [Codec]) is
// authenticated, not stored.
//
// Key rotation: the first key seals; every key opens values sealed under
// it. To rotate, put the new key first and keep the old ones after it
// until no run that is not finished holds a value sealed under them
// (sealed values live only while their call is pending; they are dropped
// from the run when its turn's results are recorded).
//
// A wrong key: a value sealed under a key the codec does not hold, or
// altered, does not open ([ErrSealKey]); the runtime then treats the call
// as if it had no codec, and the interruption's reason names the key id it
// needed.
type SealCodec struct {
	ids   []string
	aeads []cipher.AEAD
}

// NewSealCodec returns a codec that seals under key and opens values
// sealed under key or any of older. Each key is 32 random bytes (AES-256).
func NewSealCodec(key []byte, older ...[]byte) (*SealCodec, error) {
	c := &SealCodec{}
	for i, k := range append([][]byte{key}, older...) {
		if len(k) != 32 {
			return nil, fmt.Errorf("actoviq: seal key %d is %d bytes; an AES-256 key is 32 random bytes", i+1, len(k))
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, fmt.Errorf("actoviq: seal key %d: %w", i+1, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("actoviq: seal key %d: %w", i+1, err)
		}
		sum := sha256.Sum256(k)
		c.ids = append(c.ids, hex.EncodeToString(sum[:8]))
		c.aeads = append(c.aeads, aead)
	}
	return c, nil
}

// ParseSealKeys decodes keys written as standard base64 (with or without
// padding) or hex, separated by commas: the form of the ACTOVIQ_SEAL_KEY
// environment variable of the command-line tool. The first key seals.
func ParseSealKeys(s string) ([][]byte, error) {
	var out [][]byte
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, err := hex.DecodeString(part)
		if err != nil || len(k) != 32 {
			k, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(part, "="))
		}
		if err != nil {
			return nil, fmt.Errorf("actoviq: seal key %d is neither base64 nor hex", i+1)
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, errors.New("actoviq: no seal key given")
	}
	return out, nil
}

// KeyID returns the id of the key that seals (the first one).
func (c *SealCodec) KeyID() string { return c.ids[0] }

// Seal implements [Codec].
func (c *SealCodec) Seal(plaintext, aad []byte) (string, error) {
	aead := c.aeads[0]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("actoviq: seal: %w", err)
	}
	data := aead.Seal(nonce, nonce, plaintext, aad)
	return sealPrefix + c.ids[0] + "." + base64.RawURLEncoding.EncodeToString(data), nil
}

// Open implements [Codec].
func (c *SealCodec) Open(sealed string, aad []byte) ([]byte, error) {
	rest, ok := strings.CutPrefix(sealed, sealPrefix)
	id, enc, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 {
		return nil, &SealKeyError{Reason: "not in the v1 format"}
	}
	for i, kid := range c.ids {
		if kid != id {
			continue
		}
		data, err := base64.RawURLEncoding.DecodeString(enc)
		aead := c.aeads[i]
		if err != nil || len(data) < aead.NonceSize()+aead.Overhead() {
			return nil, &SealKeyError{KeyID: id, Reason: "malformed data"}
		}
		plain, err := aead.Open(nil, data[:aead.NonceSize()], data[aead.NonceSize():], aad)
		if err != nil {
			return nil, &SealKeyError{KeyID: id, Reason: "authentication failed (altered, or sealed for another call)"}
		}
		return plain, nil
	}
	return nil, &SealKeyError{KeyID: id, Reason: fmt.Sprintf("sealed under a key this codec does not hold (it holds %s)", strings.Join(c.ids, ", "))}
}
