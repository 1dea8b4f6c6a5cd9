//go:build linux

package mcptool

import (
	"os/exec"
	"syscall"
)

// dieWithParent ties a stdio server's life to this process. The server
// runs in a process group of its own (a terminal's Ctrl-C reaches the
// runtime, which closes its servers in order, and not the servers behind
// its back), and the kernel sends it SIGKILL when the process that started
// it dies, even by SIGKILL, so a killed run leaves no orphaned server.
// The parent-death signal reaches the process started from the
// configuration: a launcher (npx, sh -c) that starts the real server as
// its own child passes it on only if that child exits when its stdin
// closes. Name the server's own executable (node path/to/server.js) where
// that matters.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
