package proctest

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// WaitPids waits until file holds at least n pids (separated by blanks)
// and returns the first n; after timeout it fails the test.
func WaitPids(t testing.TB, file string, n int, timeout time.Duration) []int {
	t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(file)
		if f := strings.Fields(string(b)); len(f) >= n {
			pids := make([]int, n)
			for i, s := range f[:n] {
				pid, err := strconv.Atoi(s)
				if err != nil {
					t.Fatalf("%s: %q is not a pid", file, s)
				}
				pids[i] = pid
			}
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: fewer than %d pids after %v", file, n, timeout)
		}
	}
}

// Running reports whether pid is a live process. A zombie is not: a test
// process that inherited it (as a subreaper) reaps it here.
func Running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 && s[i+2] == 'Z' {
		syscall.Wait4(pid, nil, syscall.WNOHANG, nil)
		return false
	}
	return true
}

// WaitGone waits up to timeout for every pid to end; each one still running
// then is an error of the test (saying what) and is killed.
func WaitGone(t testing.TB, what string, pids []int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for _, pid := range pids {
		for Running(pid) {
			if time.Now().After(deadline) {
				t.Errorf("%s: process %d still running", what, pid)
				syscall.Kill(pid, syscall.SIGKILL)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
