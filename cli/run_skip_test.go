package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
)

// TestRunTableOnlySkipsUnpairedEstimates: a headless run that prints only
// the table skips the unpaired estimates (analysis.Options.
// SkipUnpairedEstimates), one with --json or an export does not, and the
// table is the same either way (on the simulated phone, which gives the
// same trials for the same seed).
func TestRunTableOnlySkipsUnpairedEstimates(t *testing.T) {
	plan := &lab.Experiment{}
	for _, c := range []struct {
		h    headlessRun
		want bool
	}{
		{headlessRun{}, true},
		{headlessRun{quiet: true}, true},
		{headlessRun{json: true}, false},
		{headlessRun{exports: runExports{json: "r.json"}}, false},
		{headlessRun{exports: runExports{csv: "r.csv"}}, false},
		{headlessRun{exports: runExports{markdown: "r.md"}}, false},
	} {
		if got := c.h.analysisOptions(plan).SkipUnpairedEstimates; got != c.want {
			t.Errorf("%+v: SkipUnpairedEstimates %v, want %v", c.h, got, c.want)
		}
	}

	exp := writeExperiment(t, map[string]any{
		"device": "sim:pixel",
		"builds": map[string]any{
			"control":   map[string]any{"name": "feed", "app": "feed"},
			"treatment": map[string]any{"name": "feed changed", "app": "feed", "effect_pct": 3},
		},
		"trials": 40, "warmup": 1, "order": "alternate", "seed": 3,
	})
	dir := t.TempDir()
	lean, stderr, code := runPerflab(t, "run", exp, "--headless", "--quiet", "--out", filepath.Join(dir, "a.jsonl"))
	if code != exitOK && code != exitRegression {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	md := filepath.Join(dir, "r.md")
	full, stderr, code2 := runPerflab(t, "run", exp, "--headless", "--quiet", "--out", filepath.Join(dir, "b.jsonl"), "--export-markdown", md)
	if code2 != code {
		t.Fatalf("exit %d with the export, %d without\n%s", code2, code, stderr)
	}
	if !strings.Contains(lean, "paired rounds") {
		t.Fatalf("not a paired analysis:\n%s", lean)
	}
	if lean != full {
		t.Errorf("the table differs when the unpaired estimates are skipped:\n%s\nwith them:\n%s", lean, full)
	}
	if b, err := os.ReadFile(md); err != nil || len(b) == 0 {
		t.Errorf("markdown export: %v, %d bytes", err, len(b))
	}
}
