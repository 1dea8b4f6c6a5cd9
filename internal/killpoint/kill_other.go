//go:build !unix

package killpoint

import "os"

func kill() { os.Exit(137) }
