package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perflab/perflab/internal/proctest"
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
			pids := proctest.WaitPids(t, pidfile, 3, 2*time.Minute)
			cmd.Process.Signal(sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(2 * time.Minute):
				cmd.Process.Kill()
				t.Fatalf("perflab did not exit 2 minutes after %v", sig)
			}
			proctest.WaitGone(t, "after perflab got "+sig.String(), pids, 2*time.Minute)
			if sig == syscall.SIGHUP {
				b, err := os.ReadFile(session)
				if err != nil || !strings.Contains(string(b), `"type":"end"`) || !strings.Contains(string(b), `"cancelled"`) {
					t.Errorf("after SIGHUP the session has no cancelled end event (%v):\n%s", err, b)
				}
			}
		})
	}
}
