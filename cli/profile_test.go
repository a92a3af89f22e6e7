package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/bisect"
	"github.com/perflab/perflab/sessions/engine"
	"github.com/perflab/perflab/sessions/profdiff"
)

// TestProfileFamilies (issue 34): perflab profile's default view says it
// is the declared family with its false discovery rate; a phase and
// --cum say they are exploratory views, on screen and in --json; a
// phase's total is its own, and --cum sums only the outermost reported
// functions. A profiled sim session, feed.decodeImage 12% slower.
func TestProfileFamilies(t *testing.T) {
	exp := bisect.SimTemplate(3)
	exp.Trials, exp.Profile = 14, true
	exp.Builds = map[string]lab.Build{lab.ArmControl: {App: "feed"},
		lab.ArmTreatment: {App: "feed", Effect: &lab.FunctionEffect{Function: "feed.decodeImage", Pct: 12}}}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if _, err := engine.RunSession(context.Background(), bisect.SimLab(), engine.Plan{Experiment: exp, Path: path, Tool: "test"}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := simCmd(t, "profile", path, "--top", "3")
	if code != 0 || !strings.Contains(out, "declared family: self time, all phases: false discovery rate at most 0.05") ||
		!strings.Contains(out, "weighted by each function's share of the time") ||
		!strings.Contains(out, "per round of the launch; the reported functions add up to") {
		t.Errorf("exit %d:\n%s%s", code, out, errOut)
	}
	code, out, _ = simCmd(t, "profile", path, "--phase", "first_frame", "--top", "3")
	if code != 0 || !strings.Contains(out, "exploratory view (self time, phase first_frame): corrected within this view only, not across views; the declared family is self time, all phases") ||
		!strings.Contains(out, "per round of phase first_frame") {
		t.Errorf("phase:\n%s", out)
	}
	code, out, _ = simCmd(t, "profile", path, "--cum", "--json")
	var r struct {
		Declared  bool     `json:"declared_family"`
		Family    string   `json:"family"`
		Weighting string   `json:"weighting"`
		Explained []string `json:"explained"`
		Functions []struct {
			Name    string  `json:"name"`
			Verdict string  `json:"verdict"`
			CILevel float64 `json:"ci_level"`
		} `json:"functions"`
	}
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	if r.Declared || !strings.HasPrefix(r.Family, "exploratory view (cumulative time)") || r.Weighting != "share" || len(r.Explained) != 1 {
		t.Errorf("cumulative: declared %v, family %q, weighting %q, summed %v", r.Declared, r.Family, r.Weighting, r.Explained)
	}
	if f := r.Functions[0]; f.Verdict != "regression" || !(f.CILevel > 0.95 && f.CILevel < 1) {
		t.Errorf("first function %+v", f)
	}
}

// TestProfileFitsTheTerminal: at 80 columns the table keeps Δ, interval,
// corrected p and verdict, every line within 80; without a width (a
// pipe) it has every column.
func TestProfileFitsTheTerminal(t *testing.T) {
	r := &profdiff.Report{Kind: "self", Pairs: 12, Tested: 2, Alpha: 0.05, Declared: true, Family: "declared family: self time, all phases",
		Functions: []profdiff.Function{
			{Name: "com.example.app.very.long.package.name.RenderThread.drawFrameWithShadows", AMs: 10, BMs: 11, DeltaMs: 1, DeltaPct: 10,
				CILowPct: 5, CIHighPct: 15, P: 0.001, PAdjusted: 0.002, Verdict: "regression", Tested: true},
			{Name: "libc.read", AMs: 3, BMs: 3, DeltaPct: 0, CILowPct: -1, CIHighPct: 1, P: 0.9, PAdjusted: 0.9, Verdict: "inconclusive", Tested: true},
		}}
	var narrow, full bytes.Buffer
	printProfile(&narrow, r, 20, 80)
	printProfile(&full, r, 20, 0)
	for _, l := range strings.Split(narrow.String(), "\n") {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("a line of %d columns: %q", n, l)
		}
	}
	if !strings.Contains(narrow.String(), "drawFrameWithShadows") || !strings.Contains(narrow.String(), "\n…") || strings.Contains(narrow.String(), "A ms") || !strings.Contains(narrow.String(), "p adj") {
		t.Errorf("narrow:\n%s", narrow.String())
	}
	if !strings.Contains(full.String(), "A ms") || !strings.Contains(full.String(), "com.example.app.very.long") {
		t.Errorf("full:\n%s", full.String())
	}
}
