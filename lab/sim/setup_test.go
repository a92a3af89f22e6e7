package sim

import (
	"context"
	"testing"

	"github.com/perflab/perflab/internal/checktest"
	"github.com/perflab/perflab/lab"
)

// snapshotBytes sums the sizes of the files in a package's snapshot.
func snapshotBytes(t *testing.T, ph *Phone, pkg string) int64 {
	t.Helper()
	var walk func(dir string) int64
	walk = func(dir string) int64 {
		fis, err := ph.ReadDir(dir)
		if err != nil {
			t.Fatalf("ReadDir(%s): %v", dir, err)
		}
		var n int64
		for _, fi := range fis {
			if fi.Dir {
				n += walk(dir + "/" + fi.Name)
			} else {
				n += fi.Size
			}
		}
		return n
	}
	return walk(SnapshotDir + "/" + pkg)
}

// A device reused for several runs must snapshot the same clean state each
// time; otherwise every later run starts from an older app and drifts.
func TestSetupSnapshotIsCleanOnReuse(t *testing.T) {
	d, err := Open("pixel", Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	b := lab.Build{App: "feed"}
	exp := &lab.Experiment{Builds: map[string]lab.Build{"control": b, "treatment": b}, Trials: 5, Order: "alternate", Seed: 3}
	pkg := BuildPackage(b)
	var sizes []int64
	for run := 0; run < 3; run++ {
		if _, err := d.Setup(context.Background(), exp); err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, snapshotBytes(t, d.Phone(), pkg))
		// Trials without restore let the app's state grow, as a run would.
		for i := 0; i < 10; i++ {
			if r := d.RunTrial(context.Background(), lab.TrialRequest{Index: i, Arm: lab.ArmControl, BuildKey: "control", Build: b}); r.Status != lab.StatusOK {
				t.Fatalf("trial %d: %s %s", i, r.Status, r.Reason)
			}
		}
	}
	if sizes[0] == 0 {
		t.Fatalf("empty snapshot: the setup launch wrote no state")
	}
	for i, s := range sizes {
		if s != sizes[0] {
			t.Errorf("run %d snapshot %d bytes, run 0 %d bytes: state carried over between runs", i, s, sizes[0])
		}
	}
}

// CheckBuilds refuses exactly the builds Setup refuses, with the same
// error, and passes those it runs.
func TestCheckBuildsMatchesSetup(t *testing.T) {
	tests := []struct {
		name   string
		builds map[string]lab.Build
		want   string // "" for builds the phone runs
	}{
		{"apps", map[string]lab.Build{lab.ArmControl: {App: "feed"}, lab.ArmTreatment: {App: "notes", EffectPct: 5}}, ""},
		{"command", map[string]lab.Build{lab.ArmControl: {Command: []string{"true"}}, lab.ArmTreatment: {App: "feed"}}, "builds.control.app: a sim build names a simulated app (feed, notes)"},
		{"unknown app", map[string]lab.Build{lab.ArmControl: {App: "feed"}, lab.ArmTreatment: {App: "nosuch"}}, "builds.treatment.app: "},
		{"free startup", map[string]lab.Build{lab.ArmControl: {App: "feed", EffectPct: -100}, lab.ArmTreatment: {App: "feed"}}, "builds.control.effect_pct: -100 would make startup free"},
	}
	for _, tt := range tests {
		d, err := Open("pixel", Options{Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		exp := &lab.Experiment{Builds: tt.builds, Seed: 3}
		cerr := d.CheckBuilds(exp)
		_, serr := d.Setup(context.Background(), exp)
		d.Close()
		checktest.Agree(t, tt.name, cerr, serr, tt.want)
	}
}

// CheckMetrics refuses exactly the metrics Setup refuses, with the same
// error naming the field and listing what the phone measures, and passes
// those the simulated apps report.
func TestCheckMetricsMatchesSetup(t *testing.T) {
	tests := []struct {
		name    string
		metrics []string
		want    string // "" for metrics the phone gives
	}{
		{"none", nil, ""},
		{"both", []string{"bytes_written", "startup_ms"}, ""},
		{"unknown", []string{"cpu_ms"}, `metrics[0]: "cpu_ms" is not measured here (known: [startup_ms bytes_written])`},
		{"second unknown", []string{"startup_ms", "wall_ms"}, `metrics[1]: "wall_ms" is not measured here (known: [startup_ms bytes_written])`},
		{"typo", []string{"startup"}, `metrics[0]: "startup" is not measured here; did you mean "startup_ms"? (known: [startup_ms bytes_written])`},
	}
	for _, tt := range tests {
		d, err := Open("pixel", Options{Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		exp := &lab.Experiment{Builds: map[string]lab.Build{lab.ArmControl: {App: "feed"}, lab.ArmTreatment: {App: "feed"}}, Metrics: tt.metrics, Seed: 3}
		cerr := d.CheckMetrics(exp)
		_, serr := d.Setup(context.Background(), exp)
		d.Close()
		checktest.Agree(t, tt.name, cerr, serr, tt.want)
	}
}

// CheckControls refuses exactly the controls Setup refuses, with the same
// error, and passes those the phone applies (or ignores, as the local
// host's); a trial given a refused profile live fails with that error.
func TestCheckControlsMatchesSetup(t *testing.T) {
	pin := 3
	tests := []struct {
		name     string
		controls lab.Controls
		want     string // "" for controls the phone applies
	}{
		{"none", lab.Controls{}, ""},
		{"phone controls", lab.Controls{Governor: []byte(`"stock"`), Tmpfs: true, KillApp: true, DropCaches: true, Proxy: "record"}, ""},
		{"local controls", lab.Controls{PinCPU: &pin, Prepare: []string{"true"}}, ""},
		{"unknown profile", lab.Controls{Governor: []byte(`"nosuch"`)}, `controls.governor: unknown profile "nosuch"`},
		{"bad profile", lab.Controls{Governor: []byte(`{"clusters": 3}`)}, "controls.governor: "},
	}
	builds := map[string]lab.Build{lab.ArmControl: {App: "feed"}, lab.ArmTreatment: {App: "notes"}}
	for _, tt := range tests {
		d, err := Open("pixel", Options{Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		exp := &lab.Experiment{Builds: builds, Controls: tt.controls, Seed: 3}
		cerr := d.CheckControls(exp)
		_, serr := d.Setup(context.Background(), exp)
		checktest.Agree(t, tt.name, cerr, serr, tt.want)
		if cerr != nil {
			if _, err := d.Setup(context.Background(), &lab.Experiment{Builds: builds, Seed: 3}); err != nil {
				t.Fatal(err)
			}
			r := d.RunTrial(context.Background(), lab.TrialRequest{Arm: lab.ArmControl, BuildKey: lab.ArmControl, Build: builds[lab.ArmControl], Controls: tt.controls})
			if r.Status != lab.StatusFailed || r.Reason != cerr.Error() {
				t.Errorf("%s live: trial %s %q, want failed %q", tt.name, r.Status, r.Reason, cerr)
			}
		}
		d.Close()
	}
}
