package actoviq

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A SIGKILLed holder whose parent has not reaped it yet is a zombie: its
// pid exists, signal 0 succeeds, but it can never write again. It counts
// as dead, so a resume need not wait for its lease to expire.
func TestZombieHolderIsDead(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("zombie detection reads /proc (Linux)")
	}
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no hostname")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	holder := fmt.Sprintf("%s:%d:20261201T090000Z.abcd/1", host, pid)
	if deadLocalHolder(holder) {
		t.Fatal("a running child counts as dead")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Not reaped: wait until the kernel shows it as a zombie.
	deadline := time.Now().Add(10 * time.Second)
	for procState(pid) != 'Z' {
		if time.Now().After(deadline) {
			t.Fatalf("child %d never became a zombie (state %q)", pid, procState(pid))
		}
		runtime.Gosched()
	}
	// Signal 0 still reaches a zombie: existence alone says "alive".
	if signalGone(pid) {
		t.Fatalf("precondition: signal 0 reports zombie %d gone", pid)
	}
	if !deadLocalHolder(holder) {
		t.Fatalf("zombie %d counts as alive", pid)
	}
	cmd.Wait()
	if !deadLocalHolder(holder) {
		t.Fatal("a reaped child counts as alive")
	}
}

func procState(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0
	}
	return s[i+2]
}
