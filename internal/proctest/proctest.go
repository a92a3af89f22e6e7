// Package proctest runs a real subprocess in a test, waits until it says it
// reached a point, and kills it with SIGKILL: how tests show what a crashed
// perflab leaves behind.
package proctest

import (
	"bufio"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Proc is a running subprocess, killed and reaped when the test ends.
type Proc struct {
	Cmd  *exec.Cmd
	reap sync.Once
}

// StartUntil starts cmd and returns once it printed the line want on its
// stdout; any other line first, or none within timeout, fails the test.
func StartUntil(t testing.TB, cmd *exec.Cmd, want string, timeout time.Duration) *Proc {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Proc{Cmd: cmd}
	t.Cleanup(func() { cmd.Process.Kill(); p.Wait() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case l, ok := <-lines:
		if !ok || l != want {
			t.Fatalf("%s printed %q, want %q", cmd.Path, l, want)
		}
	case <-time.After(timeout):
		t.Fatalf("%s did not print %q within %v", cmd.Path, want, timeout)
	}
	return p
}

// Start starts cmd without waiting for output.
func Start(t testing.TB, cmd *exec.Cmd) *Proc {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Proc{Cmd: cmd}
	t.Cleanup(func() { cmd.Process.Kill(); p.Wait() })
	return p
}

// Pid is the process ID.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Kill9 sends SIGKILL and reaps the process, so it is gone (not a zombie)
// when Kill9 returns.
func (p *Proc) Kill9(t testing.TB) {
	t.Helper()
	if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.Wait()
}

// Wait reaps the process once.
func (p *Proc) Wait() { p.reap.Do(func() { p.Cmd.Wait() }) }
