package cli

import (
	"errors"
	"strings"
	"testing"

	actoviq "github.com/actoviq/actoviq-go"
)

func TestSealKeyFromEnv(t *testing.T) {
	envs := map[string]string{}
	e := &env{getenv: func(k string) string { return envs[k] }}
	if c, err := e.codec(); c != nil || err != nil {
		t.Fatalf("unset: %v %v", c, err)
	}
	envs[sealKeyEnv] = strings.Repeat("0f", 32) + "," + strings.Repeat("1e", 32)
	c, err := e.codec()
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := c.Seal([]byte(`{"api_key":"k"}`), []byte("aad"))
	if err != nil || !strings.HasPrefix(sealed, "v1."+c.(*actoviq.SealCodec).KeyID()) {
		t.Fatalf("seal: %q %v", sealed, err)
	}
	for _, bad := range []string{"short", strings.Repeat("ab", 16)} {
		envs[sealKeyEnv] = bad
		_, err := e.codec()
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != ExitUsage || !strings.Contains(err.Error(), sealKeyEnv) || strings.Contains(err.Error(), bad) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}
