package local_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/engine"
	"github.com/perflab/perflab/lab/local"
	"github.com/perflab/perflab/sessions/profdiff"
)

// buildProfiled builds testdata/profiled, the real program of these tests.
func buildProfiled(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "profiled")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/profiled").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runLocalProfiled runs the program as A and with 40% more work in
// drawRows as B, profiled by profiler, and returns the session's path.
func runLocalProfiled(t *testing.T, bin, profiler string) string {
	t.Helper()
	exp := lab.Experiment{Device: "local", Order: lab.OrderAlternate, Trials: 6, Warmup: 1, Seed: 1,
		Profile: true, Profiler: profiler, Metrics: []string{"wall_ms"},
		Builds: map[string]lab.Build{
			lab.ArmControl:   {Name: "base", Command: []string{bin, "-n", "20000000"}},
			lab.ArmTreatment: {Name: "more", Command: []string{bin, "-n", "20000000", "-more", "40"}},
		}}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	l := engine.Lab{Open: func(ctx context.Context, id string, realtime bool) (lab.Device, error) { return local.New(), nil }}
	if _, err := engine.RunSession(context.Background(), l, engine.Plan{Experiment: exp, Path: path, Tool: "test"}); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLocalProfiles profiles a real program on this host with perf record
// and with the program's own Go profile: every trial has a profile, its
// samples carry the program's phases (PERFLAB_SPAN lines joined by time
// for perf, pprof labels for Go's profile), and the function with 40% more
// work has the largest change. The shares are CPU samples, so the ranking
// holds on a loaded host; no verdict is asserted on its wall clock.
func TestLocalProfiles(t *testing.T) {
	bin := buildProfiled(t)
	for _, profiler := range []string{local.ProfilerPerf, local.ProfilerPprof} {
		t.Run(profiler, func(t *testing.T) {
			if profiler == local.ProfilerPerf {
				if _, err := exec.LookPath("perf"); err != nil {
					t.Skip("perf is not installed (test.sh installs linux-perf)")
				}
			}
			path := runLocalProfiled(t, bin, profiler)
			r, err := profdiff.Analyze(path, profdiff.Options{MinSamples: 2})
			if err != nil {
				t.Fatal(err)
			}
			if r.Pairs != 6 || len(r.Notes) != 0 {
				t.Fatalf("%d pairs, notes %q", r.Pairs, r.Notes)
			}
			if !slices.Contains(r.Phases, "load") || !slices.Contains(r.Phases, "draw") {
				t.Errorf("phases %v", r.Phases)
			}
			if f := r.Functions[0]; f.Name != "main.drawRows" || !(f.DeltaMs > 0) {
				t.Errorf("largest change: %s Δ %.2f ms (want main.drawRows, more)", f.Name, f.DeltaMs)
			}
			draw, err := profdiff.Analyze(path, profdiff.Options{MinSamples: 2, Phase: "draw"})
			if err != nil || draw.Functions[0].Name != "main.drawRows" {
				t.Errorf("phase draw: %v", err)
			}
		})
	}
}
