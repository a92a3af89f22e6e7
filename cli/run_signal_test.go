package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunSignalsEndTheTrialTree runs the real perflab binary on a local
// experiment whose trial starts a process tree (a child in the trial's
// group and one in a session of its own), then hangs it up (a closed
// terminal) or SIGKILLs it. Either way the whole tree dies with it; after
// SIGHUP the session also ends with an end event, as after Ctrl-C.
func TestRunSignalsEndTheTrialTree(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			pidfile := filepath.Join(dir, "pids")
			script := fmt.Sprintf(`f=%s
sleep 300 &
echo $! >> $f.tmp
setsid sh -c 'echo $$ >> %s.tmp; exec sleep 300' &
while [ $(wc -l < $f.tmp) -lt 2 ]; do sleep 0.01; done
echo $$ >> $f.tmp
mv $f.tmp $f
sleep 300`, pidfile, pidfile)
			exp := writeExperiment(t, map[string]any{
				"device": "local",
				"builds": map[string]any{"control": map[string]any{"command": []string{"sh", "-c", script}}, "treatment": map[string]any{"command": []string{"sh", "-c", script}}},
				"trials": 1, "warmup": 0, "order": "fixed",
			})
			bin, err := perflabBinary()
			if err != nil {
				t.Fatal(err)
			}
			session := filepath.Join(dir, "s.jsonl")
			cmd := exec.Command(bin, "run", exp, "--headless", "--quiet", "--out", session)
			cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir())
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var pids []int
			for deadline := time.Now().Add(30 * time.Second); len(pids) < 3; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatal("the trial did not start its processes in 30 s")
				}
				b, _ := os.ReadFile(pidfile)
				pids = pids[:0]
				for _, f := range strings.Fields(string(b)) {
					pid, err := strconv.Atoi(f)
					if err != nil {
						t.Fatalf("pid file %q", b)
					}
					pids = append(pids, pid)
				}
			}
			cmd.Process.Signal(sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("perflab did not exit 60 s after %v", sig)
			}
			deadline := time.Now().Add(30 * time.Second)
			for _, pid := range pids {
				for running(pid) {
					if time.Now().After(deadline) {
						t.Errorf("process %d of the trial outlived perflab (%v)", pid, sig)
						syscall.Kill(pid, syscall.SIGKILL)
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			if sig == syscall.SIGHUP {
				b, err := os.ReadFile(session)
				if err != nil || !strings.Contains(string(b), `"type":"end"`) || !strings.Contains(string(b), `"cancelled"`) {
					t.Errorf("after SIGHUP the session has no cancelled end event (%v):\n%s", err, b)
				}
			}
		})
	}
}

// running reports whether pid is a live process (a zombie is not; this
// test process may have inherited it, so it is reaped here).
func running(pid int) bool {
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
