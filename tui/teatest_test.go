package tui

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/exp/teatest/v2"

	tea "charm.land/bubbletea/v2"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/devices"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/engine"
	"github.com/perflab/perflab/sessions/study"
)

// realBackend wires the workbench to the real lab, as cli/tui.go does.
func realBackend() Backend {
	opt := devices.Options{Seed: 1}
	return Backend{
		ListDevices: func(ctx context.Context) ([]lab.DeviceInfo, error) { return devices.List(ctx, opt) },
		Lab: engine.Lab{Open: func(ctx context.Context, id string, realtime bool) (lab.Device, error) {
			o := opt
			o.Realtime = realtime
			return devices.Open(ctx, id, o)
		}},
		Tool: "perflab test",
		StartStudy: func(ctx context.Context, p StudyPlan) <-chan study.Update {
			return study.ValidateStream(ctx, testValidateConfig(p))
		},
		Builds: func(lab.DeviceInfo) []BuildChoice {
			return []BuildChoice{
				{Label: "feed", Build: lab.Build{Name: "feed", App: "feed"}},
				{Label: "feed+5%", Build: lab.Build{Name: "feed+5%", App: "feed", EffectPct: 5}},
			}
		},
	}
}

// Deadlines only catch hangs: the race-built program on a loaded 2-core
// host can take seconds for what takes milliseconds alone.
const (
	screenWait = 2 * time.Minute // a screen following a key, a program ending
	runWait    = 5 * time.Minute // a run completing
)

func waitScreen(t *testing.T, tm *teatest.TestModel, text string, d time.Duration) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(text)) },
		teatest.WithDuration(d), teatest.WithCheckInterval(20*time.Millisecond))
}

// TestTeatestRunOnSimulatedPhone runs the whole flow in a Bubble Tea
// program on the real simulated phone, runner and session writer, in
// simulated time, and checks that the dashboard's final analysis is the one
// perflab report computes from the saved session.
func TestTeatestRunOnSimulatedPhone(t *testing.T) {
	dir := t.TempDir()
	m := New(Options{Backend: realBackend(), SessionDir: dir, Device: "sim:pixel", Now: fixedNow,
		Profiles: func(lab.DeviceInfo) []string { return []string{"recommended", "max"} }})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 40),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii)))
	waitScreen(t, tm, "sim:pixel", screenWait)
	tm.Send(keyPress("enter")) // the preselected sim:pixel
	waitScreen(t, tm, "2/3 pick builds", screenWait)
	tm.Send(keyPress("enter")) // A feed; the cursor moves to feed+5%
	tm.Send(keyPress("enter")) // B feed+5%
	waitScreen(t, tm, "3/3 controls", screenWait)
	tm.Send(keyPress("a")) // every control on
	for i := 0; i < 13; i++ {
		tm.Send(keyPress("down"))
	}
	tm.Send(keyPress("space")) // sim pace: instant
	waitScreen(t, tm, "instant", screenWait)
	tm.Send(keyPress("enter"))
	// Output read by one wait is gone for the next: wait for both at once.
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return bytes.Contains(b, []byte("end: completed")) && bytes.Contains(b, []byte("· final"))
	}, teatest.WithDuration(runWait), teatest.WithCheckInterval(20*time.Millisecond))
	tm.Send(keyPress("q"))
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(screenWait)).(*Model)

	path := fm.Session()
	if filepath.Dir(path) != dir {
		t.Fatalf("session %q not in %s", path, dir)
	}
	s, err := sessions.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if e := s.End(); e == nil || e.Reason != "completed" {
		t.Fatalf("session end %+v", e)
	}
	if got := s.Header.Plan.Controls; !got.RestoreSnapshot || !got.Tmpfs || governorName(got.Governor) != "recommended" {
		t.Errorf("plan controls %+v: the stepper's choices were not recorded", got)
	}
	// The stability check ran after Setup (the governor applied) and before
	// the first trial.
	probes, firstTrial := 0, -1
	for i, ev := range s.Events {
		if ev.Type == lab.EventProbe {
			probes++
			if firstTrial >= 0 {
				t.Fatalf("probe sample at event %d after the first trial (%d)", i, firstTrial)
			}
		}
		if ev.Type == lab.EventTrial && firstTrial < 0 {
			firstTrial = i
		}
	}
	if probes < 20 {
		t.Errorf("%d probe samples, want the 30 s check", probes)
	}
	// The dashboard's accumulated samples are perflab report's.
	want := sessions.MetricInputs(s.Events)
	got := fm.dash.state.inputs()
	if len(got) != len(want) {
		t.Fatalf("%d metrics, report has %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Name != want[i].Name || !equal(got[i].Samples[0], want[i].Samples[0]) || !equal(got[i].Samples[1], want[i].Samples[1]) {
			t.Errorf("metric %d: dashboard %s (%d/%d), report %s (%d/%d)", i, got[i].Name, len(got[i].Samples[0]), len(got[i].Samples[1]),
				want[i].Name, len(want[i].Samples[0]), len(want[i].Samples[1]))
		}
	}
	// And so is the final verdict.
	rep := analysis.Compare(want, engine.Options(&s.Header.Plan))
	if !fm.dash.finalDone {
		t.Fatal("final analysis not computed")
	}
	for i, mp := range fm.dash.panel.metrics {
		rp := float64(rep.Metrics[i].MannWhitney.P)
		if pr := rep.Metrics[i].Paired; pr != nil {
			rp = float64(pr.P)
		}
		if mp.verdict != rep.Metrics[i].Verdict || (mp.p != rp && !(math.IsNaN(mp.p) && math.IsNaN(rp))) {
			t.Errorf("%s: dashboard %s p=%g, report %s p=%g", mp.name, mp.verdict, mp.p, rep.Metrics[i].Verdict, rp)
		}
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestTeatestReplay replays a session at full speed and quits.
func TestTeatestReplay(t *testing.T) {
	m := NewReplay(Options{Now: fixedNow}, simInfo(), synthPlan(30), synthEvents(30, 20, true), 0, nil)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(80, 24),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii)))
	waitScreen(t, tm, "at end", screenWait)
	tm.Send(keyPress("q"))
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(screenWait)).(*Model)
	if !fm.replay.rp.done() || fm.replay.state.end == nil {
		t.Error("replay did not reach the end")
	}
}

// TestWaitSavedEndsAnInterruptedRun checks that a run cut short (the
// program killed mid-run) still closes its session with an end event.
func TestWaitSavedEndsAnInterruptedRun(t *testing.T) {
	dir := t.TempDir()
	m := sized(New(Options{Backend: realBackend(), SessionDir: dir, Now: fixedNow}), 80, 24)
	m.device = simInfo()
	m.exp = synthPlan(50)
	m.controls = newControlsPane(m.st, m.device, m.exp, nil, false) // real time: slow enough to interrupt
	msg := m.start()()
	m.Update(msg)
	if m.dash.err != nil {
		t.Fatal(m.dash.err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := m.WaitSaved(screenWait); err != nil {
		t.Fatal(err)
	}
	s, err := sessions.Load(m.Session())
	if err != nil {
		t.Fatal(err)
	}
	if e := s.End(); e == nil || e.Reason != "cancelled" {
		t.Fatalf("end %+v, want cancelled", e)
	}
}

// TestStabilityCheckFromThePicker runs the picker's check (c) on the real
// simulated phone and shows its chart and verdict; nothing is recorded.
func TestStabilityCheckFromThePicker(t *testing.T) {
	dir := t.TempDir()
	m := sized(New(Options{Backend: realBackend(), SessionDir: dir, Device: "sim:pixel", Now: fixedNow, Instant: true}), 80, 24)
	run(t, m, m.Init(), skipTicks)
	press(t, m, "c")
	if m.screen != screenCheck {
		t.Fatalf("screen %d", m.screen)
	}
	if !m.check.finished || m.check.chart.Samples() < 25 {
		t.Fatalf("check: finished %v, %d samples", m.check.finished, m.check.chart.Samples())
	}
	s := screenText(m)
	if !regexp.MustCompile(`MFLOPS stability check(?: · |\s+)(stable|unstable) · mean \d+ MFLOPS`).MatchString(s) || !strings.Contains(s, "┤") {
		t.Errorf("check screen:\n%s", s)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("a check wrote %v", ents)
	}
	press(t, m, "esc")
	if m.screen != screenDevices {
		t.Errorf("esc: screen %d, want the picker", m.screen)
	}
}

// TestTwoRunsInOneSecondGetTwoSessions: the second run of the same second
// gets its own file instead of failing on the first one's.
func TestTwoRunsInOneSecondGetTwoSessions(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i := 0; i < 2; i++ {
		m := sized(New(Options{Backend: realBackend(), SessionDir: dir, Now: fixedNow, Instant: true}), 80, 24)
		m.device = simInfo()
		m.exp = synthPlan(3)
		m.controls = m.newControls(m.device, m.exp)
		m.controls.probeS = 0
		run(t, m, m.start(), skipTicks)
		if m.dash.err != nil || m.dash.state.end == nil {
			t.Fatalf("run %d: err %v end %v", i, m.dash.err, m.dash.state.end)
		}
		paths = append(paths, m.Session())
	}
	if paths[0] == paths[1] || filepath.Base(paths[1]) != "20261122-030000-sim_pixel-2.jsonl" {
		t.Errorf("session files %v", paths)
	}
}

// testValidateConfig is the validation study of a workbench plan on the
// simulated phone, as cli/tui.go builds it: a fresh seeded phone per run,
// the effect injected.
func testValidateConfig(p StudyPlan) study.ValidateConfig {
	id := p.Experiment.Device
	devs := study.Devices{Fresh: true, Open: func(ctx context.Context, seed int64) (lab.Device, error) {
		return devices.Open(ctx, id, devices.Options{Seed: seed})
	}}
	return study.ValidateConfig{Experiment: p.Experiment, Devices: devs, AA: p.AA, EffectPct: p.EffectPct, Inject: true}
}

// TestTeatestValidateOnSimulatedPhone picks the validate mode in the
// stepper, runs a small real validation on the simulated phone and checks
// that the dashboard reaches the result sessions/study computes for that plan.
func TestTeatestValidateOnSimulatedPhone(t *testing.T) {
	m := New(Options{Backend: realBackend(), SessionDir: t.TempDir(), Device: "sim:pixel", Now: fixedNow})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 40),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii)))
	waitScreen(t, tm, "sim:pixel", screenWait)
	tm.Send(keyPress("enter"))
	waitScreen(t, tm, "2/3 pick builds", screenWait)
	tm.Send(keyPress("enter"))
	tm.Send(keyPress("enter"))
	waitScreen(t, tm, "3/3 controls", screenWait)
	for i := 0; i < 30; i++ {
		tm.Send(keyPress("down")) // the cursor stops on the last row, order runs
	}
	for _, k := range []string{"up", "up", "up", "space"} { // mode: validate
		tm.Send(keyPress(k))
	}
	// The probe and pace rows grey out.
	waitScreen(t, tm, "not for a study", screenWait)
	tm.Send(keyPress("down")) // A/A experiments: 240 → 200 → 100 → 50 → 30 → 20
	for i := 0; i < 5; i++ {
		tm.Send(keyPress("left"))
	}
	for i := 0; i < 6; i++ { // up to trials (past pace, profiles, probe, warm-up): 20 (lab.DefaultTrials) → 15 → 10
		tm.Send(keyPress("up"))
	}
	for i := 0; i < 2; i++ {
		tm.Send(keyPress("left"))
	}
	// Keys reach the stepper in order; the plan is checked at the end (a
	// wait for "[10 per arm]" could miss it: only changed cells are drawn).
	tm.Send(keyPress("enter"))
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		// The renderer rewrites only changed cells: wait for whole new lines.
		return bytes.Contains(b, []byte("esc back to the stepper")) && bytes.Contains(b, []byte("the setup"))
	}, teatest.WithDuration(runWait), teatest.WithCheckInterval(50*time.Millisecond))
	tm.Send(keyPress("q"))
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(screenWait)).(*Model)

	sd := fm.study
	if sd == nil || sd.validation == nil {
		t.Fatalf("no validation result (err %v)", sd.err)
	}
	got := sd.validation
	if sd.plan.AA != 20 || sd.plan.EffectPct != 1 || sd.plan.Experiment.Trials != 10 {
		t.Fatalf("plan K=%d effect %v trials %d: the stepper's choices did not reach the study", sd.plan.AA, sd.plan.EffectPct, sd.plan.Experiment.Trials)
	}
	if got.AA.Experiments+got.AA.Failed != 20 || got.Effect.Experiments+got.Effect.Failed != 20 || got.TrialsPerArm != 10 {
		t.Errorf("result covers %d+%d A/A and %d+%d effect experiments of %d trials, want 20, 20 and 10",
			got.AA.Experiments, got.AA.Failed, got.Effect.Experiments, got.Effect.Failed, got.TrialsPerArm)
	}
	if n := sd.tally("aa").runs + sd.tally("effect").runs; n != 40 {
		t.Errorf("the live tally saw %d runs, want 40", n)
	}
	// The same plan run directly gives the same result: seeds are per run.
	want, err := study.Validate(context.Background(), testValidateConfig(sd.plan), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.AA.FalsePositives != want.AA.FalsePositives || got.Effect.Detected != want.Effect.Detected {
		t.Errorf("dashboard: %d false positives, %d detected; sessions/study: %d and %d",
			got.AA.FalsePositives, got.Effect.Detected, want.AA.FalsePositives, want.Effect.Detected)
	}
}

// TestCheckOnLocalFromThePicker: c on this host, as the real listing
// describes it, starts the MFLOPS check (local is a lab.Prober) instead of
// saying the host cannot run the probe. The check's own command is not
// run: it would load this host for 30 s.
func TestCheckOnLocalFromThePicker(t *testing.T) {
	m := sized(New(Options{Backend: realBackend(), SessionDir: t.TempDir(), Device: "local", Now: fixedNow}), 80, 24)
	run(t, m, m.Init(), skipTicks)
	if d, ok := m.devices.selected(); !ok || d.ID != "local" {
		t.Fatalf("selected %+v", d)
	}
	_, cmd := m.Update(keyPress("c"))
	if m.devices.err != nil || cmd == nil {
		t.Fatalf("c on local: %v", m.devices.err)
	}
	m.Update(cmd())
	if m.screen != screenCheck || m.check == nil {
		t.Errorf("c on local: screen %d, want the check dashboard", m.screen)
	}
}
