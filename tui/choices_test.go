package tui

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
)

// TestChoicesRemembered: a run started from the pickers leaves its
// device, builds, controls and trial count for the next launch, which
// offers them first (issue 29: a second launch had the controls off, the
// trials back to the default and B back to the default; a just-used
// ready build did not move up).
func TestChoicesRemembered(t *testing.T) {
	dir := t.TempDir()
	ready := []BuildChoice{
		{Label: "feed", Detail: "a news-feed app", Build: lab.Build{Name: "feed", App: "feed"}},
		{Label: "feed+1%", Build: lab.Build{Name: "feed+1%", App: "feed", EffectPct: 1}},
		{Label: "feed+5%", Build: lab.Build{Name: "feed+5%", App: "feed", EffectPct: 5}},
		{Label: "notes", Build: lab.Build{Name: "notes", App: "notes"}},
	}
	nexus := simInfo()
	nexus.ID = "sim:nexus5"
	opt := Options{RecentPath: filepath.Join(dir, "recent.json"), ChoicesPath: filepath.Join(dir, "last.json"), DefaultDevice: "sim:pixel",
		Now: fixedNow, Instant: true, Backend: Backend{Builds: func(lab.DeviceInfo) []BuildChoice { return ready }}}
	devs := devicesListedMsg{devices: []lab.DeviceInfo{simInfo(), nexus}}

	m := sized(New(opt), 80, 24)
	m.Update(devs)
	if d, _ := m.devices.selected(); d.ID != "sim:pixel" {
		t.Fatalf("first launch preselects %q, want the default sim:pixel", d.ID)
	}
	if c := m.newControls(simInfo(), lab.Experiment{}); c.trials != lab.DefaultTrials {
		t.Errorf("fresh trials %d, want lab.DefaultTrials (%d), as perflab run --headless", c.trials, lab.DefaultTrials)
	}
	press(t, m, "down", "enter")                          // sim:nexus5
	press(t, m, "down", "down", "down", "enter")          // A: notes
	press(t, m, "up", "up", "enter")                      // B: feed+1%
	press(t, m, "space", "down", "down", "down", "space") // restore snapshot, drop caches on
	for m.controls.rows[m.controls.cursor].setting != "trials" {
		press(t, m, "down")
	}
	press(t, m, "right") // 20 → 30
	want := m.controls.experiment(lab.Experiment{})
	if want.Trials != 30 || !want.Controls.RestoreSnapshot || !want.Controls.DropCaches {
		t.Fatalf("the stepper's settings %+v", want)
	}
	press(t, m, "enter") // starts (no backend: the run fails to start, the choices are saved)

	m2 := sized(New(opt), 80, 24)
	m2.Update(devs)
	if d, _ := m2.devices.selected(); d.ID != "sim:nexus5" {
		t.Errorf("second launch preselects %q, want the last sim:nexus5", d.ID)
	}
	press(t, m2, "enter")
	var labels []string
	for _, it := range m2.builds.items {
		labels = append(labels, it.choice.Label)
	}
	if got := strings.Join(labels, ","); got != "notes,feed+1%,feed,feed+5%" {
		t.Errorf("builds offered %s, want the last A and B first", got)
	}
	press(t, m2, "enter", "enter") // the cursor's offers: the last A, then the last B
	if a, b := m2.exp.Builds[lab.ArmControl], m2.exp.Builds[lab.ArmTreatment]; a.Name != "notes" || b.Name != "feed+1%" {
		t.Errorf("builds A %q B %q, want notes and feed+1%%", a.Name, b.Name)
	}
	got := m2.controls.experiment(lab.Experiment{})
	if got.Trials != 30 || !got.Controls.RestoreSnapshot || !got.Controls.DropCaches || got.Controls.KillApp {
		t.Errorf("second launch's stepper: trials %d, controls %+v; want 30, restore snapshot and drop caches", got.Trials, got.Controls)
	}
	if !strings.Contains(screenText(m2), "[30 per arm]") {
		t.Errorf("the stepper does not show the remembered trials:\n%s", screenText(m2))
	}
	// An experiment file's settings stay as written.
	f := sized(NewRun(opt, simInfo(), synthPlan(12)), 80, 24)
	if got := f.controls.experiment(lab.Experiment{}); got.Trials != 12 || got.Controls.DropCaches {
		t.Errorf("a file's run took the last choices: trials %d, controls %+v", got.Trials, got.Controls)
	}
}

// TestRememberedControlsTheDeviceLacks: controls remembered from one
// device that another of its backend cannot apply are left off.
func TestRememberedControlsTheDeviceLacks(t *testing.T) {
	dev := simInfo()
	dev.Caps = []string{lab.CapKillApp}
	st := NewStyles(true, true)
	p := newControlsPane(&st, dev, lab.Experiment{}, nil, false)
	p.remember(lastChoices{Backend: "sim", Controls: &lab.Controls{KillApp: true, DropCaches: true}, Trials: 50})
	c := p.experiment(lab.Experiment{})
	if !c.Controls.KillApp || c.Controls.DropCaches || c.Trials != 50 {
		t.Errorf("remembered %+v, want kill app only and 50 trials", c)
	}
}

// TestControlsTrialsOfASuite: a suite's trials per arm are said as
// rounds of each benchmark, as perflab suite --trials counts them.
func TestControlsTrialsOfASuite(t *testing.T) {
	bench := &lab.BenchSpec{Packages: []lab.BenchPackage{{Path: "m", Benchmarks: []string{"A", "B", "C"}}}}
	suite := lab.Experiment{Trials: 12, Suite: &lab.SuiteInfo{Module: "m"},
		Builds: map[string]lab.Build{lab.ArmControl: {Bench: bench}, lab.ArmTreatment: {Bench: bench}}}
	st := NewStyles(true, true)
	for _, tt := range []struct {
		exp    lab.Experiment
		trials int
		want   string
	}{
		{lab.Experiment{Trials: 12}, 12, "12 per arm"},
		{suite, 12, "12 per arm: 4 rounds of 3 benchmarks"},
		{suite, 20, "20 per arm: about 6 rounds of 3 benchmarks"},
	} {
		p := newControlsPane(&st, simInfo(), tt.exp, nil, false)
		p.trials = tt.trials
		if got := p.value(controlRow{setting: "trials"}); got != tt.want {
			t.Errorf("trials %d: %q, want %q", tt.trials, got, tt.want)
		}
	}
}
