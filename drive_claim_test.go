package actoviq

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

func TestDeadLocalHolder(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no hostname")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	live := fmt.Sprintf("%s:%d:abc/def", host, pid)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait() // reaped: the pid is gone
	cases := map[string]bool{
		live: true,
		fmt.Sprintf("%s:%d:abc/def", host, os.Getpid()):  false, // ourselves
		fmt.Sprintf("%s:%d:abc/def", "other-host", pid):  false, // can't tell
		fmt.Sprintf("%s:%d:abc/def", host, os.Getppid()): false, // alive
		"custom-holder":                   false,
		fmt.Sprintf("%s:notapid:x", host): false,
	}
	for h, want := range cases {
		if got := deadLocalHolder(h); got != want {
			t.Errorf("deadLocalHolder(%q) = %v, want %v", h, got, want)
		}
	}
}
