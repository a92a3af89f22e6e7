package tui

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/perflab/perflab/lab"
)

// key builds a key press as Bubble Tea reports it.
func keyPress(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

// run executes cmd and everything it leads to, feeding each message back
// into m, except messages skip says to drop. It stops after limit messages.
func run(t *testing.T, m *Model, cmd tea.Cmd, skip func(tea.Msg) bool) {
	t.Helper()
	queue := []tea.Cmd{cmd}
	for n := 0; len(queue) > 0; n++ {
		if n > 10000 {
			t.Fatal("too many messages")
		}
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		msg := c()
		switch msg := msg.(type) {
		case nil:
			continue
		case tea.BatchMsg:
			queue = append(queue, msg...)
			continue
		case tea.QuitMsg:
			continue
		}
		if skip != nil && skip(msg) {
			continue
		}
		_, next := m.Update(msg)
		queue = append(queue, next)
	}
}

// skipTicks drops replay ticks and background colour queries.
func skipTicks(msg tea.Msg) bool {
	switch msg.(type) {
	case replayTickedMsg:
		return true
	}
	return fmt.Sprintf("%T", msg) == "tea.backgroundColorMsg"
}

// press sends keys to m and runs what they lead to.
func press(t *testing.T, m *Model, keys ...string) {
	t.Helper()
	for _, k := range keys {
		_, cmd := m.Update(keyPress(k))
		run(t, m, cmd, skipTicks)
	}
}

// screenText renders m without ANSI sequences.
func screenText(m *Model) string { return ansi.Strip(m.render()) }

// sized returns m after a window-size message.
func sized(m *Model, w, h int) *Model {
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return m
}

// simInfo is a device like the sim presets, with every phone capability.
func simInfo() lab.DeviceInfo {
	return lab.DeviceInfo{ID: "sim:pixel", Backend: "sim", Model: "Pixel 3 (simulated)", State: "device",
		Caps: []string{lab.CapSimTime, lab.CapGovernor, lab.CapRestoreSnapshot, lab.CapKillApp, lab.CapDismissDialogs,
			lab.CapClockReset, lab.CapProxy, lab.CapTmpfs, lab.CapDropCaches, lab.CapProbe}}
}

func localInfo() lab.DeviceInfo {
	return lab.DeviceInfo{ID: "local", Backend: "local", Model: "AMD EPYC", State: "device",
		Caps: []string{lab.CapCommandBuilds, lab.CapPrepare, lab.CapStateDir, lab.CapASLR, lab.CapPinCPU}}
}

// synthPlan is the plan of synthEvents.
func synthPlan(trials int) lab.Experiment {
	return lab.Experiment{Device: "sim:pixel", Trials: trials, Warmup: 1, Order: "random", Seed: 7,
		Builds: map[string]lab.Build{
			lab.ArmControl:   {Name: "feed", App: "feed"},
			lab.ArmTreatment: {Name: "feed+5%", App: "feed", EffectPct: 5},
		}}
}

// synthEvents makes a deterministic session: probe samples, settings, one
// warm-up round, then rounds of A and B trials where B is 5% slower, a
// failed trial, a toggle and a note, and an end when complete is set.
func synthEvents(rounds, probes int, complete bool) []lab.Event {
	rng := rand.New(rand.NewPCG(1, 2))
	var evs []lab.Event
	t := 0.0
	for i := 0; i < probes; i++ {
		t += 1
		evs = append(evs, lab.Event{Type: lab.EventProbe, T: t, Probe: &lab.ProbeSample{
			T: float64(i), MFLOPS: 2400 + 60*math.Sin(float64(i)/4) + rng.NormFloat64()*15,
			FreqKHz: []int{1766400, 2803200}, TempC: 38 + float64(i)*0.05}})
	}
	ctl := lab.Controls{RestoreSnapshot: true, KillApp: true}
	evs = append(evs, lab.Event{Type: lab.EventSettings, T: t, Settings: &lab.Settings{Order: "random", Controls: &ctl}})
	idx := 0
	order := "random"
	for r := 0; r < rounds+1; r++ {
		if r == rounds/2 && r > 0 {
			t += 0.1
			evs = append(evs, lab.Event{Type: lab.EventToggle, T: t, Toggle: &lab.Toggle{What: "order", From: "random", To: "alternate", Round: r}})
			order = "alternate"
			evs = append(evs, lab.Event{Type: lab.EventNote, T: t, Note: &lab.Note{Text: "switched to ABAB to compare"}})
		}
		arms := []string{lab.ArmControl, lab.ArmTreatment}
		if order == "random" && rng.IntN(2) == 1 {
			arms[0], arms[1] = arms[1], arms[0]
		}
		for _, arm := range arms {
			base := 500.0
			if arm == lab.ArmTreatment {
				base *= 1.05
			}
			dur := base / 1000
			t += dur
			tr := &lab.Trial{Index: idx, Round: r, Arm: arm, Build: arm, Warmup: r == 0, Order: order, Status: lab.StatusOK, Duration: dur,
				Metrics: []lab.Metric{
					{Name: "startup_ms", Value: base + rng.NormFloat64()*12, Unit: "ms", Better: "lower"},
					{Name: "frames", Value: 60 + rng.NormFloat64(), Unit: "fps", Better: "higher"},
				}}
			if idx == 7 {
				tr.Status, tr.Reason, tr.Metrics = lab.StatusFailed, "app crashed before first frame", []lab.Metric{}
			}
			evs = append(evs, lab.Event{Type: lab.EventTrial, T: t, Trial: tr})
			idx++
		}
	}
	if complete {
		evs = append(evs, lab.Event{Type: lab.EventEnd, T: t, End: &lab.End{Reason: "completed"}})
	}
	return evs
}

// fakeRunner records the live calls and emits the events a test feeds it,
// as lab.Runner does (toggles and notes become events).
type fakeRunner struct {
	mu    sync.Mutex
	calls []string
	out   chan lab.Event
}

func newFakeRunner() *fakeRunner { return &fakeRunner{out: make(chan lab.Event, 1024)} }

func (f *fakeRunner) Run(ctx context.Context) <-chan lab.Event { return f.out }
func (f *fakeRunner) record(s string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
	return nil
}
func (f *fakeRunner) SetOrder(mode string) error { return f.record("order " + mode) }
func (f *fakeRunner) SetControls(c lab.Controls) error {
	return f.record("controls " + controlsSummary(c))
}
func (f *fakeRunner) Pause() error           { return f.record("pause") }
func (f *fakeRunner) Resume() error          { return f.record("resume") }
func (f *fakeRunner) AddNote(t string) error { return f.record("note " + t) }
func (f *fakeRunner) Calls() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.calls, "; ")
}

var fixedNow = func() time.Time { return time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC) }
