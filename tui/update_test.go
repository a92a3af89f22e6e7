package tui

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/engine"
)

func TestDevicePickerSortsPreselectsAndRefusesOffline(t *testing.T) {
	m := sized(New(Options{Device: "sim:pixel", Now: fixedNow}), 80, 24)
	offline := lab.DeviceInfo{ID: "adb:emulator-1", Backend: "adb", State: "offline"}
	nexus := simInfo()
	nexus.ID = "sim:nexus5"
	m.Update(devicesListedMsg{devices: []lab.DeviceInfo{localInfo(), offline, nexus, simInfo()}})
	var ids []string
	for _, d := range m.devices.devices {
		ids = append(ids, d.ID)
	}
	if got, want := strings.Join(ids, " "), "sim:nexus5 sim:pixel local adb:emulator-1"; got != want {
		t.Errorf("order = %q, want %q", got, want)
	}
	if d, _ := m.devices.selected(); d.ID != "sim:pixel" {
		t.Errorf("preselected %q, want sim:pixel", d.ID)
	}
	press(t, m, "down", "down")
	press(t, m, "enter")
	if m.screen != screenDevices || m.devices.err == nil || !strings.Contains(m.devices.err.Error(), "offline") {
		t.Fatalf("choosing an offline device: screen %d, err %v", m.screen, m.devices.err)
	}
	press(t, m, "up", "c")
	if m.devices.err == nil || !strings.Contains(m.devices.err.Error(), "MFLOPS") {
		t.Errorf("stability check on local: err %v, want a probe error", m.devices.err)
	}
	press(t, m, "up", "enter")
	if m.screen != screenBuilds || m.device.ID != "sim:pixel" {
		t.Fatalf("after enter on sim:pixel: screen %d device %q", m.screen, m.device.ID)
	}
}

func TestBuildPickerChoosesBothArmsAndRemembersThem(t *testing.T) {
	recent := filepath.Join(t.TempDir(), "recent.json")
	ready := []BuildChoice{
		{Label: "feed", Build: lab.Build{Name: "feed", App: "feed"}},
		{Label: "feed+1%", Build: lab.Build{Name: "feed+1%", App: "feed", EffectPct: 1}},
	}
	m := sized(New(Options{RecentPath: recent, Now: fixedNow, Backend: Backend{Builds: func(lab.DeviceInfo) []BuildChoice { return ready }}}), 80, 24)
	m.Update(deviceChosenMsg{device: simInfo()})
	press(t, m, "enter")
	if m.builds.chosen[0] == nil || m.builds.arm != 1 || m.builds.cursor != 1 {
		t.Fatalf("after choosing A: chosen %v arm %d cursor %d", m.builds.chosen[0], m.builds.arm, m.builds.cursor)
	}
	press(t, m, "enter")
	if m.screen != screenControls {
		t.Fatalf("screen %d, want controls", m.screen)
	}
	if a, b := m.exp.Builds[lab.ArmControl], m.exp.Builds[lab.ArmTreatment]; a.Name != "feed" || b.EffectPct != 1 {
		t.Errorf("builds A %+v B %+v", a, b)
	}
	rs, err := loadRecent(recent)
	if err != nil || len(rs) != 2 || rs[0].Label != "feed" {
		t.Fatalf("recent builds %+v, err %v", rs, err)
	}
	// The next visit lists them as recently used.
	m2 := sized(New(Options{RecentPath: recent, Now: fixedNow}), 80, 24)
	m2.Update(deviceChosenMsg{device: simInfo()})
	if len(m2.builds.items) != 2 || !m2.builds.items[0].recent {
		t.Errorf("recent items %+v", m2.builds.items)
	}
	// esc goes back a step.
	press(t, m, "esc")
	if m.screen != screenBuilds {
		t.Errorf("esc from controls: screen %d", m.screen)
	}
}

func TestBuildPickerTypedCommand(t *testing.T) {
	m := sized(New(Options{Now: fixedNow}), 80, 24)
	m.Update(deviceChosenMsg{device: localInfo()})
	press(t, m, "enter") // the only item: command…
	if !m.builds.editing() {
		t.Fatal("command input not open")
	}
	press(t, m, "q") // typed, not quit
	for _, r := range "uit 1" {
		press(t, m, string(r))
	}
	press(t, m, "enter")
	c := m.builds.chosen[0]
	if c == nil || strings.Join(c.Build.Command, "|") != "sh|-c|quit 1" {
		t.Fatalf("chosen %+v", c)
	}
	press(t, m, "enter", "enter") // an empty command is refused
	if m.builds.err == nil {
		t.Error("empty command accepted")
	}
}

func TestControlsStepperGreysOutAndToggles(t *testing.T) {
	dev := simInfo()
	dev.Caps = []string{lab.CapRestoreSnapshot, lab.CapKillApp, lab.CapGovernor}
	p := newControlsPane(&Styles{}, dev, lab.Experiment{Order: "random", Trials: 30}, []string{"recommended", "max"}, false)
	p.SetSize(80, 20)
	rowOf := func(k string) int {
		for i, r := range p.rows {
			if r.def.key == k || r.setting == k {
				return i
			}
		}
		t.Fatalf("no row %q", k)
		return -1
	}
	check := func(key, want string) {
		t.Helper()
		if got := p.value(p.rows[rowOf(key)]); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	send := func(row string, keys ...string) {
		p.cursor = rowOf(row)
		for _, k := range keys {
			p, _ = p.Update(keyPress(k))
		}
	}
	send("restore_snapshot", "space")
	check("restore_snapshot", "on")
	// Not supported: no row of its own, named on the line under them.
	for _, r := range p.rows {
		if r.def.key == "proxy" {
			t.Error("unsupported proxy has a row")
		}
	}
	if !slices.Contains(p.absent, "proxy") {
		t.Errorf("absent %v, want proxy among them", p.absent)
	}
	send("governor", "space", "space")
	check("governor", "max")
	send("order", "space")
	check("order", "fixed")
	send("trials", "right")
	check("trials", "50 per arm")
	send("trials", "h", "h")
	check("trials", "20 per arm")
	send("probe", "space")
	check("probe", "off") // the device has no probe capability
	if _, ok := controlDefByKey("aslr"); !ok {
		t.Fatal("aslr control missing")
	}
	for _, r := range p.rows {
		if r.def.key == "aslr" {
			t.Error("local-only control shown for a sim device")
		}
	}
	p, _ = p.Update(keyPress("a"))
	if !p.controls.KillApp || governorName(p.controls.Governor) != "recommended" || p.controls.Proxy != "" {
		t.Errorf("all on: %+v", p.controls)
	}
	view := p.View()
	if !strings.Contains(view, "not on sim:pixel: ") {
		t.Errorf("view does not name the unsupported controls:\n%s", view)
	}
	exp := p.experiment(lab.Experiment{})
	if exp.Order != "fixed" || exp.Trials != 20 || !exp.Controls.RestoreSnapshot {
		t.Errorf("experiment %+v", exp)
	}
}

// liveModel returns a model showing a live run driven by a fake runner.
func liveModel(t testing.TB, w, h int) (*Model, *fakeRunner, chan relayItem, *bool) {
	m := sized(New(Options{Now: fixedNow}), w, h)
	m.device, m.exp = simInfo(), synthPlan(30)
	fr := newFakeRunner()
	ch := make(chan relayItem, 4096)
	cancelled := new(bool)
	m.stream = 1
	m.dash, m.screen = m.newRunDash(), screenDashboard
	_, cmd := m.Update(runStartedMsg{stream: 1, run: &liveRun{stream: 1, runner: fr, cancel: func() { *cancelled = true }, events: ch, sessionPath: "/tmp/s.jsonl", device: simInfo()}})
	if cmd == nil {
		t.Fatal("no wait command after the run started")
	}
	return m, fr, ch, cancelled
}

func TestLiveActionsGoThroughTheRunner(t *testing.T) {
	m, fr, _, cancelled := liveModel(t, 80, 24)
	press(t, m, "o") // random → alternate
	press(t, m, "p")
	press(t, m, "n")
	for _, r := range "fan on" {
		press(t, m, string(r))
	}
	press(t, m, "enter")
	press(t, m, "c", "space", "enter")
	want := "order alternate; pause; note fan on; controls restore_snapshot"
	if got := fr.Calls(); got != want {
		t.Errorf("runner calls %q, want %q", got, want)
	}
	// The state follows the events the runner records, not the key presses.
	m.Update(eventsArrivedMsg{stream: 1, events: []lab.Event{{Type: lab.EventToggle, Toggle: &lab.Toggle{What: "order", From: "random", To: "alternate", Round: 3}}}})
	press(t, m, "o")
	if got := fr.Calls(); !strings.HasSuffix(got, "order random") {
		t.Errorf("second o: calls %q, want order random last", got)
	}
	press(t, m, "x", "n")
	if *cancelled {
		t.Fatal("abort without y")
	}
	press(t, m, "x", "y")
	if !*cancelled {
		t.Fatal("abort with y did not cancel")
	}
}

func TestQuitWhileRunningAsksThenShowsTheEnd(t *testing.T) {
	m, _, ch, cancelled := liveModel(t, 80, 24)
	_, cmd := m.Update(keyPress("q"))
	if cmd != nil || !m.dash.confirmAbort {
		t.Fatal("q during a run did not ask")
	}
	_, cmd = m.Update(keyPress("y"))
	if !*cancelled || cmd != nil {
		t.Fatalf("y: cancelled %v, cmd %v (must wait for the session to close)", *cancelled, cmd)
	}
	close(ch)
	msg := waitForEvents(1, ch)()
	_, cmd = m.Update(msg)
	// The end screen stays (issue 29: nothing lost on exit); q quits.
	if cmd != nil {
		if _, ok := cmd().(tea.QuitMsg); ok {
			t.Fatal("stream closed after q, y: quit before the end screen was seen")
		}
	}
	if _, cmd = m.Update(keyPress("q")); cmd == nil {
		t.Fatal("q on the end screen does nothing")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Error("q on the end screen: want tea.Quit")
	}
}

func TestAnalysisRunsOneAtATimeAndCatchesUp(t *testing.T) {
	m, _, ch, _ := liveModel(t, 80, 24)
	ch <- relayItem{} // lets the re-armed wait return at once
	evs := synthEvents(20, 0, false)
	_, cmd1 := m.Update(eventsArrivedMsg{stream: 1, events: evs[:20]})
	if !m.dash.computing {
		t.Fatal("no analysis started")
	}
	m.Update(eventsArrivedMsg{stream: 1, events: evs[20:]})
	// Run only the analysis from the first batch.
	report := reportFrom(t, cmd1)
	if report.version == 0 || report.version == m.dash.state.Version() {
		t.Fatalf("first analysis at version %d, state at %d", report.version, m.dash.state.Version())
	}
	_, next := m.Update(report)
	if next == nil || !m.dash.computing {
		t.Fatal("no catch-up analysis after new trials")
	}
	r2 := next().(reportComputedMsg)
	m.Update(r2)
	if m.dash.panelVer != m.dash.state.Version() || m.dash.computing {
		t.Errorf("panel at %d, state at %d, computing %v", m.dash.panelVer, m.dash.state.Version(), m.dash.computing)
	}
	if m.dash.panel.resamples != analysis.DefaultResamples {
		t.Errorf("live panel with %d resamples, want the report's %d", m.dash.panel.resamples, analysis.DefaultResamples)
	}
}

// reportFrom runs cmd and the commands of its batches concurrently and
// returns the first analysis among their messages. Commands waiting for
// events nobody sends are left blocked. The deadline only catches a hang:
// a race-built analysis on a loaded host can take seconds.
func reportFrom(t *testing.T, cmd tea.Cmd) reportComputedMsg {
	t.Helper()
	msgs := make(chan tea.Msg, 64)
	var run func(tea.Cmd)
	run = func(c tea.Cmd) {
		if c == nil {
			return
		}
		go func() {
			msg := c()
			if b, ok := msg.(tea.BatchMsg); ok {
				for _, c := range b {
					run(c)
				}
				return
			}
			msgs <- msg
		}()
	}
	run(cmd)
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case msg := <-msgs:
			if r, ok := msg.(reportComputedMsg); ok {
				return r
			}
		case <-deadline:
			t.Fatal("no analysis within 2 minutes")
		}
	}
}

func TestReplayStepsJumpsAndConcludes(t *testing.T) {
	evs := synthEvents(30, 5, true)
	m := sized(NewReplay(Options{Now: fixedNow}, simInfo(), synthPlan(30), evs, 1, nil), 80, 24)
	press(t, m, "space") // pause the replay Init would start
	press(t, m, ".")
	if m.replay.rp.pos != 1 || m.replay.chart.Samples() != 1 {
		t.Fatalf("after one step: pos %d probes %d", m.replay.rp.pos, m.replay.chart.Samples())
	}
	press(t, m, "3")
	if m.replay.rp.speed != 0 {
		t.Errorf("speed %g, want max (0)", m.replay.rp.speed)
	}
	press(t, m, "s")
	if m.replay.rp.speed != 1 {
		t.Errorf("speed after s from max %g, want 1", m.replay.rp.speed)
	}
	press(t, m, "G")
	if !m.replay.rp.done() || m.replay.state.end == nil {
		t.Fatal("G did not reach the end")
	}
	if !m.replay.finalDone {
		t.Fatal("final analysis not done")
	}
	got := map[string]string{}
	for _, mp := range m.replay.panel.metrics {
		got[mp.name] = mp.verdict
	}
	if got["startup_ms"] != "regression" || got["frames"] != "inconclusive" {
		t.Errorf("verdicts %v, want startup_ms regression, frames inconclusive", got)
	}
	if s := screenText(m); !strings.Contains(s, "regression") || !strings.Contains(s, "at end") {
		t.Errorf("screen lacks the verdict or the replay state:\n%s", s)
	}
	// Replay has no live controls.
	press(t, m, "o", "x")
	if strings.Contains(screenText(m), "abort the run") {
		t.Error("replay offered to abort")
	}
}

func TestReplayTicksFollowTheSessionClock(t *testing.T) {
	evs := synthEvents(5, 0, true)
	r := newReplayer(evs, 10, 1)
	r.play()
	t0 := fixedNow()
	var got int
	last := evs[len(evs)-1].T
	// At ×10 each 50 ms frame covers 0.5 s of session time.
	for i := 1; i <= 40 && !r.done(); i++ {
		t0 = t0.Add(replayFrame)
		e, _ := r.tick(replayTickedMsg{gen: r.gen, at: t0})
		got += len(e)
		if r.clock < last && r.clock > float64(i)*0.5+1e-9 {
			t.Fatalf("frame %d: clock %.2f ahead of the pace", i, r.clock)
		}
		if i == 4 && r.done() {
			t.Fatal("2 s of session time replayed everything")
		}
	}
	if got != len(evs) || !r.done() {
		t.Errorf("applied %d of %d events", got, len(evs))
	}
	// A stale tick from an earlier play does nothing.
	r2 := newReplayer(evs, 1, 1)
	r2.play()
	old := r2.gen
	r2.play()
	if e, c := r2.tick(replayTickedMsg{gen: old, at: t0}); e != nil || c != nil {
		t.Error("stale tick advanced the replay")
	}
}

// TestReplayKeepsTheTrialsSpacing: trials 5 s apart (a session on a
// real-time phone) replay 5 s apart at ×1, not back to back (issue 35:
// 82 trials in under 5 s); a gap of minutes (a pause) plays as a second.
func TestReplayKeepsTheTrialsSpacing(t *testing.T) {
	evs := []lab.Event{{Type: lab.EventNote, T: 0}, {Type: lab.EventNote, T: 5}, {Type: lab.EventNote, T: 10}, {Type: lab.EventNote, T: 400}}
	r := newReplayer(evs, 1, 1)
	r.play()
	at := fixedNow()
	tick := func(secs float64) int {
		n := 0
		for range int(secs * float64(time.Second/replayFrame)) {
			at = at.Add(replayFrame)
			e, _ := r.tick(replayTickedMsg{gen: r.gen, at: at})
			n += len(e)
		}
		return n
	}
	if n := tick(3); n != 1 {
		t.Fatalf("after 3 s at ×1: %d events, want the first only", n)
	}
	if n := tick(3); n != 1 {
		t.Fatalf("after 6 s: %d more, want the one at 5 s", n)
	}
	if n := tick(5); n != 1 || r.done() {
		t.Fatalf("after 11 s: %d more (done %v), want the one at 10 s", n, r.done())
	}
	if n := tick(2); n != 1 || !r.done() {
		t.Fatalf("the 390 s gap: %d more after 2 s, want the last (skipped to its last second)", n)
	}
}

func TestRunStartFailureIsShown(t *testing.T) {
	m := sized(New(Options{Now: fixedNow, Backend: Backend{
		Lab: engine.Lab{Open: func(ctx context.Context, id string, realtime bool) (lab.Device, error) {
			return nil, context.DeadlineExceeded
		}},
	}}), 80, 24)
	m.device, m.exp = simInfo(), synthPlan(10)
	m.controls = newControlsPane(m.st, m.device, m.exp, nil, false)
	m.screen = screenControls
	press(t, m, "enter")
	if m.screen != screenDashboard || m.dash.err == nil || !strings.Contains(screenText(m), "open device sim:pixel") {
		t.Fatalf("start failure not shown:\n%s", screenText(m))
	}
	// Nothing runs, so q quits at once.
	_, cmd := m.Update(keyPress("q"))
	if cmd == nil {
		t.Fatal("q did not quit")
	}
}

func TestHelpToggles(t *testing.T) {
	m := sized(New(Options{Now: fixedNow}), 80, 24)
	press(t, m, "?")
	if !strings.Contains(screenText(m), "stability check") || !m.help.ShowAll {
		t.Fatal("full help not shown")
	}
	press(t, m, "esc")
	if m.help.ShowAll {
		t.Error("esc did not close help")
	}
}

func TestAPKFilePickerAndPackage(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"app-old.apk", "notes.txt", "sub/app-new.APK"} {
		path := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("apk"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	m := sized(New(Options{Now: fixedNow}), 80, 24)
	m.Update(deviceChosenMsg{device: lab.DeviceInfo{ID: "adb:R58M", Backend: "adb", State: "device", Caps: []string{lab.CapAPKBuilds}}})
	press(t, m, "enter") // APK file…
	if m.builds.mode != "apk" {
		t.Fatalf("mode %q, want the file picker", m.builds.mode)
	}
	view := screenText(m)
	if !strings.Contains(view, "sub") || !strings.Contains(view, "app-old.apk") || !strings.Contains(view, "APK file in "+dir) {
		t.Fatalf("picker lists the wrong files:\n%s", view)
	}
	press(t, m, "down", "down", "enter") // notes.txt is listed but cannot be chosen
	if m.builds.mode != "apk" {
		t.Fatalf("mode %q after enter on notes.txt, want the picker still", m.builds.mode)
	}
	press(t, m, "up", "up", "enter") // into sub/
	press(t, m, "enter")             // app-new.APK
	if m.builds.mode != "package" {
		t.Fatalf("mode %q after choosing a file, want the package prompt", m.builds.mode)
	}
	for _, r := range "com.ex/.Main" {
		press(t, m, string(r))
	}
	press(t, m, "enter")
	c := m.builds.chosen[0]
	if c == nil || c.Build.APK != filepath.Join(dir, "sub", "app-new.APK") || c.Build.Package != "com.ex" || c.Build.Activity != ".Main" {
		t.Fatalf("chosen %+v", c)
	}
}

func TestNoColorStylesUseNoColours(t *testing.T) {
	colour := regexp.MustCompile(`\x1b\[[0-9;]*(38|48);[25];`)
	st := NewStyles(true, true)
	m, _, _, _ := liveModel(t, 120, 40)
	*m.st = st
	m.help.Styles = st.Help
	m.Update(eventsArrivedMsg{stream: 1, events: synthEvents(10, 10, false)})
	m.dash.reported(reportComputedMsg{stream: 1, version: m.dash.state.Version(), panel: analyze(m.dash.state.inputs(), engine.Options(&m.exp))})
	if out := m.render(); colour.MatchString(out) {
		t.Errorf("NO_COLOR styles emit colours: %q", colour.FindString(out))
	}
	// The verdict is spelled out, not only coloured.
	if !strings.Contains(screenText(m), "regression") {
		t.Error("verdict word missing")
	}
	if out := NewStyles(true, false).Regression.Render("x"); !colour.MatchString(out) {
		t.Errorf("colour styles have no colour: %q", out)
	}
}

// A step or a jump applies its events in the same Update that moves the
// position, so no frame shows "at end" over empty panels.
func TestReplayJumpAppliesEventsBeforeTheNextFrame(t *testing.T) {
	evs := synthEvents(30, 5, true)
	m := sized(NewReplay(Options{Now: fixedNow}, simInfo(), synthPlan(30), evs, 1, nil), 80, 24)
	press(t, m, "space")    // pause the replay Init would start
	m.Update(keyPress(".")) // commands deliberately not run
	if m.replay.chart.Samples() != 1 {
		t.Fatalf("after a step, before any command: %d probe samples shown, want 1", m.replay.chart.Samples())
	}
	m.Update(keyPress("G"))
	if !m.replay.rp.done() || m.replay.state.end == nil {
		t.Fatalf("after G, before any command: position %d/%d, end %v", m.replay.rp.pos, len(evs), m.replay.state.end)
	}
	if s := screenText(m); strings.Contains(s, "no trials yet") {
		t.Errorf("the frame after G shows no trials:\n%s", s)
	}
}
