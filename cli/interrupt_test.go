package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
)

// TestCancelledTrialIsInterrupted: the trial Ctrl-C cuts short is
// recorded as interrupted, not failed, and the counts say so (issue 29).
// The treatment's command leaves a marker before it sleeps, so the run is
// cancelled while that trial surely runs.
func TestCancelledTrialIsInterrupted(t *testing.T) {
	dir := t.TempDir()
	out, marker := filepath.Join(dir, "s.jsonl"), filepath.Join(dir, "started")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if _, err := os.Stat(marker); err == nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	var stdout, stderr bytes.Buffer
	code := dispatch(ctx, []string{"run", "--headless", "--quiet", "--order", "alternate", "--warmup", "0", "--out", out,
		"--", "true", "touch " + marker + "; sleep 60"}, &stdout, &stderr)
	if code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
	s, err := sessions.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	var last *lab.Trial
	for _, e := range s.Events {
		if e.Trial != nil {
			last = e.Trial
		}
	}
	if last == nil || last.Arm != lab.ArmTreatment || last.Status != lab.StatusInterrupted {
		t.Fatalf("last trial %+v, want the treatment's, interrupted", last)
	}
	msg := stderr.String()
	if !strings.Contains(msg, "2 trials: 1 counted control, 0 counted treatment, 1 interrupted\n") || strings.Contains(msg, "failed") {
		t.Errorf("stderr:\n%s", msg)
	}
	// The workbench exits as run --headless does: 1 for this run, 3 for
	// a completed run that regressed.
	if code, err := sessionExit(out); code != exitError || err != nil {
		t.Errorf("workbench exit after a cancelled run: %d %v, want %d", code, err, exitError)
	}
	if code, err := sessionExit("cli/testdata/sim-effect.jsonl"); code != exitRegression || err != nil {
		t.Errorf("workbench exit after a regression: %d %v, want %d", code, err, exitRegression)
	}
}
