package tui

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/exp/teatest/v2"

	tea "charm.land/bubbletea/v2"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/engine"
)

// poolDevices are the simulated phones of the pool scenes.
var poolDevices = []string{"sim:pixel", "sim:pixel#2", "sim:pixel#3"}

// synthPoolPlan is synthPlan over poolDevices.
func synthPoolPlan(trials int) lab.Experiment {
	p := synthPlan(trials)
	p.Device, p.Devices = "", poolDevices
	return p
}

// synthPoolEvents is synthEvents run on a pool: round r on device r mod
// 3, whose third device goes offline near the end and the second of
// which is 8% slower (its own Δ% is still B's +5%).
func synthPoolEvents(rounds int) []lab.Event {
	evs := []lab.Event{{Type: lab.EventSettings, Settings: &lab.Settings{Detail: map[string]string{"devices": strings.Join(poolDevices, ",")}}}}
	for _, ev := range synthEvents(rounds, 0, false) {
		if ev.Type == lab.EventTrial {
			t := *ev.Trial
			t.Device = poolDevices[t.Round%len(poolDevices)]
			if t.Device == "sim:pixel#2" {
				t.Metrics = append([]lab.Metric(nil), t.Metrics...)
				t.Metrics[0].Value *= 1.08
			}
			ev.Trial = &t
			evs = append(evs, lab.Event{Type: lab.EventStart, T: ev.T - t.Duration, Start: &lab.TrialStart{Device: t.Device, Round: t.Round, Arm: t.Arm, Warmup: t.Warmup}})
		}
		evs = append(evs, ev)
	}
	t := evs[len(evs)-1].T
	return append(evs,
		lab.Event{Type: lab.EventStart, T: t, Start: &lab.TrialStart{Device: "sim:pixel#3", Round: rounds + 1, Arm: lab.ArmTreatment}},
		lab.Event{Type: lab.EventDevice, T: t, Device: &lab.DeviceState{Device: "sim:pixel#3", State: lab.DeviceOffline, Reason: "device offline"}},
		lab.Event{Type: lab.EventNote, T: t, Note: &lab.Note{Text: fmt.Sprintf("sim:pixel#3 offline: it leaves the pool, its round %d is redone on another device (device offline)", rounds+1)}},
		lab.Event{Type: lab.EventStart, T: t, Start: &lab.TrialStart{Device: "sim:pixel", Round: rounds + 2, Arm: lab.ArmControl}},
	)
}

// TestLanesFoldEachDevice: each lane counts its device's trials, and the
// pool's notes and the end set the lanes' states.
func TestLanesFoldEachDevice(t *testing.T) {
	st := NewStyles(true, true)
	p := newLanesPane(&st, poolDevices)
	evs := synthPoolEvents(20)
	p, _ = p.Update(eventsAppliedMsg{events: evs})
	total := 0
	for _, ev := range evs {
		if ev.Type == lab.EventTrial {
			total++
		}
	}
	sum := 0
	for _, l := range p.lanes {
		sum += l.trials
	}
	if sum != total {
		t.Errorf("lanes hold %d trials of %d", sum, total)
	}
	if s := p.index["sim:pixel#3"].state; s != laneOffline {
		t.Errorf("sim:pixel#3 %s after its offline event", s)
	}
	// The trial in progress: started and not finished.
	for id, want := range map[string]string{"sim:pixel": "r22 control", "sim:pixel#2": "", "sim:pixel#3": "r21 treatment"} {
		got := ""
		if n := p.index[id].now; n != nil {
			got = fmt.Sprintf("r%d %s", n.Round, n.Arm)
		}
		if got != want {
			t.Errorf("%s: trial in progress %q, want %q", id, got, want)
		}
	}
	// A note that reads like the pool's says nothing to the lanes.
	p, _ = p.Update(eventsAppliedMsg{events: []lab.Event{{Type: lab.EventNote, Note: &lab.Note{Text: "sim:pixel#2 offline: or so the user says"}}}})
	if s := p.index["sim:pixel#2"].state; s != laneRunning {
		t.Errorf("sim:pixel#2 %s after a user's note", s)
	}
	dev := func(id, state string) lab.Event {
		return lab.Event{Type: lab.EventDevice, Device: &lab.DeviceState{Device: id, State: state}}
	}
	p, _ = p.Update(eventsAppliedMsg{events: []lab.Event{dev("sim:pixel#3", lab.DeviceBack)}})
	if s := p.index["sim:pixel#3"].state; s != laneRunning {
		t.Errorf("sim:pixel#3 %s after it is back", s)
	}
	p, _ = p.Update(eventsAppliedMsg{events: []lab.Event{dev("sim:pixel#2", lab.DeviceLeft), {Type: lab.EventEnd, End: &lab.End{Reason: "completed"}}}})
	for _, l := range p.lanes {
		want := laneDone
		if l.id == "sim:pixel#2" {
			want = laneLeft
		}
		if l.state != want || l.now != nil {
			t.Errorf("%s %s (in progress %v) after the end, want %s", l.id, l.state, l.now, want)
		}
	}
}

// disagreeingPool is synthPoolEvents without the order toggle (one
// regime) where sim:pixel#3's B is slower by skew% more than the others'.
func disagreeingPool(rounds int, skew float64) []lab.Event {
	var out []lab.Event
	for _, ev := range synthPoolEvents(rounds) {
		switch {
		case ev.Type == lab.EventToggle, ev.Type == lab.EventNote && ev.Note.Text == "switched to ABAB to compare":
			continue
		case ev.Type == lab.EventTrial && ev.Trial.Device == "sim:pixel#3" && ev.Trial.Arm == lab.ArmTreatment && ev.Trial.Status == lab.StatusOK:
			t := *ev.Trial
			t.Metrics = append([]lab.Metric(nil), t.Metrics...)
			t.Metrics[0].Value *= 1 + skew/100
			ev.Trial = &t
		}
		out = append(out, ev)
	}
	return out
}

// TestLanesShowThePoolAnalysis: a pool session in the workbench shows,
// in each lane, the device's Δ% and pairs of the pool analysis perflab
// report runs (analysis.Compare of the session's inputs, Pool.Devices),
// and the analysis' warning that one device disagrees, in the warnings
// and on its lane.
func TestLanesShowThePoolAnalysis(t *testing.T) {
	plan := synthPoolPlan(70)
	evs := disagreeingPool(60, 25)
	rep := analysis.Compare(sessions.MetricInputs(evs), engine.Options(&plan))
	pool := rep.Metrics[0].Pool
	if pool == nil || len(pool.Devices) != 3 || pool.Disagrees != "sim:pixel#3" {
		t.Fatalf("the report's pool analysis: %+v", pool)
	}
	m := sized(NewReplay(Options{Now: fixedNow}, simInfo(), plan, evs, 10, nil), 200, 50)
	press(t, m, "G")
	lanes := m.replay.lanes
	if lanes.metric != rep.Metrics[0].Name || lanes.regime != 0 {
		t.Errorf("lanes of %q (regime %d), the pool analysis is of %q", lanes.metric, lanes.regime, rep.Metrics[0].Name)
	}
	screen := screenText(m)
	for _, d := range pool.Devices {
		l := lanes.index[d.Device]
		if l == nil {
			t.Fatalf("no lane for %s", d.Device)
		}
		if l.pairs != d.N || l.delta != float64(d.Estimate()) || l.disagrees != (d.Device == "sim:pixel#3") {
			t.Errorf("%s: Δ %g%% over %d pairs (disagrees %v); the pool analysis says %g%% over %d", d.Device, l.delta, l.pairs, l.disagrees,
				float64(d.Estimate()), d.N)
		}
		if want := fmt.Sprintf("Δ %s (%d pairs)", fmtPctShort(float64(d.Estimate())), d.N); !strings.Contains(screen, want) {
			t.Errorf("%s: %q not on screen:\n%s", d.Device, want, screen)
		}
	}
	if !strings.Contains(screen, "startup_ms: device sim:pixel#3 disagrees with the rest") || !strings.Contains(screen, "disagrees (see warnings)") {
		t.Errorf("the disagreement is not shown:\n%s", screen)
	}

	// When toggles split the session, the lanes are of the analysed
	// regime, as the report's pool table is.
	plan = synthPoolPlan(30)
	evs = synthPoolEvents(20)
	rc, err := sessions.ChooseRegime(evs, "", engine.Options(&plan))
	if err != nil || rc.Pick < 0 {
		t.Fatalf("no regime chosen: %v, pick %d", err, rc.Pick)
	}
	pool = analysis.Compare(sessions.MetricInputs(rc.Events), engine.Options(&plan)).Metrics[0].Pool
	m = sized(NewReplay(Options{Now: fixedNow}, simInfo(), plan, evs, 10, nil), 200, 50)
	press(t, m, "G")
	lanes = m.replay.lanes
	if pool == nil || lanes.regime != rc.Pick+1 {
		t.Fatalf("lanes of regime %d, the report's of %d; its pool %+v", lanes.regime, rc.Pick+1, pool)
	}
	for _, d := range pool.Devices {
		if l := lanes.index[d.Device]; l == nil || l.pairs != d.N || l.delta != float64(d.Estimate()) {
			t.Errorf("%s: lane %+v; the regime's pool analysis says %g%% over %d", d.Device, l, float64(d.Estimate()), d.N)
		}
	}

	// Without the skew no device disagrees, and no lane says so.
	m = sized(NewReplay(Options{Now: fixedNow}, simInfo(), plan, disagreeingPool(60, 0), 10, nil), 200, 50)
	press(t, m, "G")
	if s := screenText(m); strings.Contains(s, "disagrees") {
		t.Errorf("a pool of agreeing devices shows a disagreement:\n%s", s)
	}
}

func TestArmLetter(t *testing.T) {
	for arm, want := range map[string]string{lab.ArmControl: "A", lab.ArmTreatment: "B", "A": "A", "C": "C", "other": "other"} {
		if got := armLetter(arm); got != want {
			t.Errorf("armLetter(%q) = %q, want %q", arm, got, want)
		}
	}
}

// TestLanesOnlyForAPool: a single device draws no lanes.
func TestLanesOnlyForAPool(t *testing.T) {
	st := NewStyles(true, true)
	p := newLanesPane(&st, nil)
	p, _ = p.Update(eventsAppliedMsg{events: synthEvents(5, 0, false)})
	p.SetSize(80, 10)
	if v := p.View(); v != "" || p.Pool() {
		t.Errorf("lanes of one device: %q", v)
	}
}

// TestTeatestPoolOfSimPhones runs an experiment over a pool of three
// simulated phones in a Bubble Tea program, on the real engine and pool,
// in simulated time: the workbench shows one lane per phone, and the
// lanes' trials add up to the session's.
func TestTeatestPoolOfSimPhones(t *testing.T) {
	dir := t.TempDir()
	exp := synthPoolPlan(12)
	exp.Order = lab.OrderAlternate
	m := NewRun(Options{Backend: realBackend(), SessionDir: dir, Now: fixedNow, Instant: true, Ctx: context.Background()},
		lab.DeviceInfo{ID: poolDevices[0]}, exp)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 40),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii)))
	waitScreen(t, tm, "3/3 controls", screenWait)
	fm, s := runPoolToEnd(t, tm, 3)
	trials := 0
	for _, ev := range s.Events {
		if ev.Type == lab.EventTrial {
			trials++
		}
	}
	lanes := fm.dash.lanes
	sum := 0
	for _, id := range poolDevices {
		l := lanes.index[id]
		if l == nil {
			t.Fatalf("no lane for %s; lanes %d", id, lanes.Len())
		}
		sum += l.trials
		if l.state != laneDone {
			t.Errorf("%s %s after the run", id, l.state)
		}
	}
	if lanes.Len() != 3 || sum != trials || trials == 0 {
		t.Errorf("%d lanes holding %d trials; the session has %d", lanes.Len(), sum, trials)
	}
	// The event log says the settings once for the pool, not per phone.
	settings := 0
	for _, l := range fm.dash.state.log {
		if strings.Contains(l, " settings") {
			settings++
		}
	}
	if settings != 1 {
		t.Errorf("%d settings lines in the event log, want 1:\n%s", settings, strings.Join(fm.dash.state.log, "\n"))
	}

	// Replayed from the file, the pool shows the same lanes.
	rm := sized(NewReplay(Options{Now: fixedNow}, s.Header.Device, s.Header.Plan, s.Events, 10, nil), 120, 40)
	press(t, rm, "G")
	replayed := rm.replay.lanes
	if replayed.Len() != 3 {
		t.Fatalf("replay: %d lanes", replayed.Len())
	}
	for _, id := range poolDevices {
		live, re := *lanes.index[id], *replayed.index[id]
		if live.state != re.state || live.trials != re.trials || live.pairs != re.pairs || live.last.Index != re.last.Index ||
			(live.delta != re.delta && !(math.IsNaN(live.delta) && math.IsNaN(re.delta))) {
			t.Errorf("%s live %s %d trials, %d pairs, Δ %g, last #%d; replayed %s %d trials, %d pairs, Δ %g, last #%d", id,
				live.state, live.trials, live.pairs, live.delta, live.last.Index, re.state, re.trials, re.pairs, re.delta, re.last.Index)
		}
	}
}

// TestReplayPoolBeforeTheEnd: a replay stopped mid-session shows each
// device's trial in progress from the file's start events.
func TestReplayPoolBeforeTheEnd(t *testing.T) {
	evs := synthPoolEvents(20)
	// Up to the last start event before trial #30: its device is mid-trial.
	cut := 0
	for i, ev := range evs {
		if ev.Type == lab.EventTrial && ev.Trial.Index == 30 {
			cut = i
			break
		}
	}
	st := NewStyles(true, true)
	p := newLanesPane(&st, poolDevices)
	p, _ = p.Update(eventsAppliedMsg{events: evs[:cut]})
	want := evs[cut].Trial
	n := p.index[want.Device].now
	if n == nil || n.Round != want.Round || n.Arm != want.Arm {
		t.Fatalf("%s: in progress %+v, want round %d %s", want.Device, n, want.Round, want.Arm)
	}
	p.SetSize(120, 4)
	if v := p.View(); !strings.Contains(v, fmt.Sprintf("now r%d %s", want.Round, armLetter(want.Arm))) {
		t.Errorf("lanes do not show the trial in progress:\n%s", v)
	}
}

// runPoolToEnd starts the run the stepper of tm shows, waits for the
// lanes of its n devices and its end, quits and loads its session.
func runPoolToEnd(t *testing.T, tm *teatest.TestModel, n int) (*Model, *sessions.Session) {
	t.Helper()
	tm.Send(keyPress("enter"))
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		s := string(b)
		// The lanes show the pool analysis, computed off the Update path:
		// wait for the final one too, not only the end event.
		return strings.Contains(s, fmt.Sprintf("devices · %d in the pool", n)) && strings.Contains(s, "end: completed") &&
			strings.Contains(s, "· final")
	}, teatest.WithDuration(runWait), teatest.WithCheckInterval(20*time.Millisecond))
	tm.Send(keyPress("q"))
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(screenWait)).(*Model)
	s, err := sessions.Load(fm.Session())
	if err != nil {
		t.Fatal(err)
	}
	return fm, s
}

// TestPickerMarksAPool: space marks devices in the picker (of one
// backend; a device of another is refused, space again unmarks), enter
// starts on the marked ones as a pool, and the run is a pool session
// with a lane per device.
func TestPickerMarksAPool(t *testing.T) {
	m := sized(New(Options{Now: fixedNow}), 100, 30)
	nexus := simInfo()
	nexus.ID = "sim:nexus5"
	m.Update(devicesListedMsg{devices: []lab.DeviceInfo{simInfo(), nexus, localInfo()}})
	press(t, m, "space", "down", "space", "down", "space")
	if m.devices.err == nil || !strings.Contains(m.devices.err.Error(), "share a backend") {
		t.Errorf("a local device joined a pool of sims: err %v", m.devices.err)
	}
	if s := screenText(m); !strings.Contains(s, "pool of 2 marked: sim:pixel, sim:nexus5") {
		t.Errorf("the picker does not show the marked pool:\n%s", s)
	}
	press(t, m, "up", "space", "space") // unmark and mark again: order follows marking
	if got := strings.Join(m.devices.marked, ","); got != "sim:pixel,sim:nexus5" {
		t.Errorf("marked %s", got)
	}

	dir := t.TempDir()
	m = New(Options{Backend: realBackend(), SessionDir: dir, Device: "sim:pixel", Now: fixedNow, Instant: true, Ctx: context.Background()})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 40),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii)))
	// The listed devices, not the header's preselected id. Keys are then
	// handled in order; the marks are not awaited on screen: the renderer
	// redraws only the changed cells of "pool of 1 marked" → "pool of 2
	// marked", so that text need never appear whole in the output (it did
	// not under load). "on a pool of 2 devices" below proves both marks.
	waitScreen(t, tm, "sim:nexus5", screenWait)
	tm.Send(keyPress("space")) // the preselected sim:pixel
	tm.Send(keyPress("down"))
	tm.Send(keyPress("space"))
	tm.Send(keyPress("enter"))
	waitScreen(t, tm, "2/3 pick builds", screenWait)
	tm.Send(keyPress("enter")) // A feed
	tm.Send(keyPress("enter")) // B feed+5%
	waitScreen(t, tm, "on a pool of 2 devices", screenWait)
	_, s := runPoolToEnd(t, tm, 2)
	devs := s.Header.Plan.Devices
	if len(devs) != 2 || devs[0] != "sim:pixel" || s.Header.Plan.Device != "" {
		t.Fatalf("plan devices %v, device %q", devs, s.Header.Plan.Device)
	}
	byDev := map[string]int{}
	for _, tr := range s.Trials() {
		byDev[tr.Device]++
	}
	if len(byDev) != 2 || byDev[devs[0]] == 0 || byDev[devs[1]] == 0 {
		t.Errorf("trials by device %v", byDev)
	}
}
