package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
)

// TestDomainEventsGoToTheirOwner: a device listing that arrives while the
// build picker is in front still reaches the device picker, so going back
// shows the devices instead of "listing devices…" for ever.
func TestDomainEventsGoToTheirOwner(t *testing.T) {
	m := sized(New(Options{Now: fixedNow}), 80, 24)
	m.Update(deviceChosenMsg{device: simInfo()})
	if m.screen != screenBuilds {
		t.Fatalf("screen %d, want the build picker", m.screen)
	}
	nexus := simInfo()
	nexus.ID = "sim:nexus5"
	m.Update(devicesListedMsg{devices: []lab.DeviceInfo{simInfo(), nexus}})
	press(t, m, "esc")
	if s := screenText(m); m.screen != screenDevices || strings.Contains(s, "listing devices") || !strings.Contains(s, "sim:nexus5") {
		t.Errorf("back on the device picker after a listing arrived behind it:\n%s", s)
	}
}

// TestHelpIsTheFocusedPanes: the help bar lists the focused pane's keys
// and then the global ones; while a prompt has the keys, only its own.
func TestHelpIsTheFocusedPanes(t *testing.T) {
	m, _, _, _ := liveModel(t, 120, 40)
	short := func() []string {
		var out []string
		for _, b := range m.paneHelp().ShortHelp() {
			if b.Enabled() {
				out = append(out, b.Help().Key)
			}
		}
		return out
	}
	if got := strings.Join(short(), " "); got != "o p c n x ? q" {
		t.Errorf("run dashboard help %q", got)
	}
	press(t, m, "n")
	if got := strings.Join(short(), " "); got != "enter esc" {
		t.Errorf("note prompt help %q", got)
	}
}

// TestStreamMessagesGoToTheirOwner: a check left with esc still reads its
// stream until it closes (the root routes by stream id, not to the pane
// in front), and a message of another stream does not reach it.
func TestStreamMessagesGoToTheirOwner(t *testing.T) {
	m := sized(New(Options{Now: fixedNow}), 80, 24)
	m.device = simInfo()
	m.stream = 7
	m.check, m.screen = m.newCheckDash(), screenCheck
	events := make(chan relayItem, 1)
	m.Update(runStartedMsg{stream: 7, run: &liveRun{stream: 7, cancel: func() {}, events: events, device: simInfo()}})
	press(t, m, "esc")
	if m.screen != screenDevices {
		t.Fatalf("screen %d after esc, want the device picker", m.screen)
	}
	probe := synthEvents(0, 3, false)[:3]
	m.Update(eventsArrivedMsg{stream: 8, events: probe})
	if n := m.check.chart.Samples(); n != 0 {
		t.Fatalf("another stream's events reached the check: %d samples", n)
	}
	m.Update(eventsArrivedMsg{stream: 7, events: probe, closed: true})
	if n := m.check.chart.Samples(); n != 3 || !m.check.finished {
		t.Errorf("check behind the picker: %d samples, finished %v; want 3 and its stream closed", n, m.check.finished)
	}
}

// TestAnalysisGoesToItsOwner: an analysis computed for one stream is not
// shown by the dashboard of another.
func TestAnalysisGoesToItsOwner(t *testing.T) {
	m, _, ch, _ := liveModel(t, 120, 40)
	_, cmd := m.Update(eventsArrivedMsg{stream: 1, events: synthEvents(20, 10, false)})
	ch <- relayItem{}
	report := reportFrom(t, cmd)
	stale := report
	stale.stream = 2
	m.Update(stale)
	if m.dash.panelVer != 0 {
		t.Fatalf("an analysis of stream 2 was shown by stream 1's dashboard")
	}
	m.Update(report)
	if m.dash.panelVer != report.version {
		t.Errorf("panel at version %d, want %d", m.dash.panelVer, report.version)
	}
}

// TestTrialsPaneKeepsTheLatest: the trial stream keeps a bounded tail,
// newest last, and draws the latest that fit.
func TestTrialsPaneKeepsTheLatest(t *testing.T) {
	st := NewStyles(true, true)
	p := newTrialsPane(&st)
	var evs []lab.Event
	for i := 1; i <= 3*trialsKept; i++ {
		evs = append(evs, lab.Event{Type: lab.EventTrial, Trial: &lab.Trial{Index: i, Round: (i + 1) / 2, Arm: lab.ArmControl, Status: lab.StatusOK}})
	}
	p, _ = p.Update(eventsAppliedMsg{events: evs})
	if p.Len() > 2*trialsKept || p.Len() < trialsKept {
		t.Fatalf("kept %d trials, want between %d and %d", p.Len(), trialsKept, 2*trialsKept)
	}
	p.SetSize(40, 3)
	lines := viewLines(p.View())
	if len(lines) != 3 || !strings.HasPrefix(lines[2], fmt.Sprintf("#%d ", 3*trialsKept)) {
		t.Errorf("view %q, want the title and the last two trials", lines)
	}
}
