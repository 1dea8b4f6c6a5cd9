//go:build !unix

package mcptool

import "os/exec"

// dieWithParent does nothing here: when the runtime's process dies the
// server sees its stdin close, and a server that does not exit then
// outlives the run (see the package documentation).
func dieWithParent(cmd *exec.Cmd) {}
