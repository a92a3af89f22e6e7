package cli

import (
	"testing"

	"github.com/perflab/perflab/lab"
)

// TestHeadlessDefaultTrials: run --headless's one-line A/B runs
// lab.DefaultTrials per arm, the workbench's default too (issue 29: the
// workbench used 30, headless 20; tui's TestChoicesRemembered checks the
// stepper).
func TestHeadlessDefaultTrials(t *testing.T) {
	exp, err := commandExperiment([]string{"true", "true"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if exp.Trials != lab.DefaultTrials {
		t.Errorf("trials %d, want lab.DefaultTrials (%d)", exp.Trials, lab.DefaultTrials)
	}
}
