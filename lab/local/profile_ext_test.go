package local_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/local"
	"github.com/perflab/perflab/sessions/engine"
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
			lab.ArmControl:   {Name: "base", Command: []string{bin, "-n", "60000000"}},
			lab.ArmTreatment: {Name: "more", Command: []string{bin, "-n", "60000000", "-more", "40"}},
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
// work has about 40% more samples (CPU time, which a loaded host does not
// change); nothing is asserted on this host's wall clock.
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
			// Sample counts are CPU time (cpu-clock, SIGPROF), whatever
			// else the host does: drawRows gets about 40% more, parseItems
			// as many. (The ms columns scale by wall_ms, which a loaded
			// host stretches.)
			ratio := map[string]float64{}
			for _, f := range r.Functions {
				if f.SamplesA > 0 && f.SamplesB > 0 {
					ratio[f.Name] = float64(f.SamplesB) / float64(f.SamplesA)
				}
			}
			d, dok := ratio["main.drawRows"]
			p, pok := ratio["main.parseItems"]
			switch {
			case !dok || !pok:
				t.Errorf("drawRows or parseItems missing from a build's profile: %v", ratio)
			case profiler == local.ProfilerPprof:
				// Go's profiler samples at 100 Hz: a few samples per
				// trial, too few for the ratio.
			case !(d > 1.2 && d < 1.7) || !(p > 0.8 && p < 1.2):
				t.Errorf("samples B/A: drawRows %.2f (want about 1.4), parseItems %.2f (want about 1)", d, p)
			}
			draw, err := profdiff.Analyze(path, profdiff.Options{MinSamples: 2, Phase: "draw"})
			if err != nil || !slices.ContainsFunc(draw.Functions, func(f profdiff.Function) bool { return f.Name == "main.drawRows" }) {
				t.Errorf("phase draw: %v", err)
			}
			for _, f := range draw.Functions {
				if f.Name == "main.parseItems" {
					t.Errorf("phase draw holds parseItems (%d+%d samples)", f.SamplesA, f.SamplesB)
				}
			}
		})
	}
}
