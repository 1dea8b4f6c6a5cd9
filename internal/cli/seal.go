package cli

import (
	actoviq "github.com/actoviq/actoviq-go"
)

// sealKeyEnv names the environment variable that holds the codec key(s)
// of the command line: 32-byte keys in hex or base64, comma-separated, the
// first one sealing (see actoviq.SealCodec for the format and rotation).
const sealKeyEnv = "ACTOVIQ_SEAL_KEY"

// codec returns the codec ACTOVIQ_SEAL_KEY configures, or nil when it is
// not set. With it, a call whose arguments hold a secret can be approved,
// re-executed and resumed by separate actoviq commands; without it, those
// commands stop with an interruption that says why.
func (e *env) codec() (actoviq.Codec, error) {
	v := e.getenv(sealKeyEnv)
	if v == "" {
		return nil, nil
	}
	keys, err := actoviq.ParseSealKeys(v)
	if err != nil {
		return nil, usageErr("%s: %v (generate a key with: openssl rand -hex 32)", sealKeyEnv, err)
	}
	c, err := actoviq.NewSealCodec(keys[0], keys[1:]...)
	if err != nil {
		return nil, usageErr("%s: %v (generate a key with: openssl rand -hex 32)", sealKeyEnv, err)
	}
	return c, nil
}
