//go:build unix

package killpoint

import (
	"os"
	"syscall"
)

func kill() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}
