//go:build unix && !linux

package mcptool

import (
	"os/exec"
	"syscall"
)

// dieWithParent puts a stdio server in a process group of its own. These
// systems have no parent-death signal: when the runtime's process dies the
// server sees its stdin close, and a server that does not exit then
// outlives the run (see the package documentation).
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
