package tui

import (
	"fmt"
	"math"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/perflab/perflab/lab"
)

// Lane states.
const (
	laneWaiting = "waiting" // no trial yet
	laneRunning = "running"
	laneOffline = "offline" // left the pool; it rejoins when back
	laneLeft    = "left"    // left the pool for good (its runner ended)
	laneDone    = "done"    // the session has ended
)

// lane is one device of a pool as its lane shows it.
type lane struct {
	id     string
	state  string
	now    *lab.TrialStart // the trial in progress, nil between trials
	last   lab.Trial       // the latest trial it ran (valid when trials > 0)
	trials int             // trials run, warm-ups and failures included
	failed int
	// From the pool analysis the panels show (analysis.PoolAnalysis'
	// Devices): the device's paired rounds and its Δ%, NaN until it has
	// some; disagrees when it names this device.
	pairs     int
	delta     float64
	disagrees bool
}

// lanesPane is a device pool: one lane per device with its state, the
// trial in progress, the trial it ran last, its own Δ% and its trials so
// far. It learns the devices' states and trials in progress from the
// pool's device and start events (lab.Pool), so a replay shows the same
// lanes. Each device's Δ% comes from the analysis the panels show, the
// pool analysis perflab report shows (analysis.AnalyzePool: the
// Hodges–Lehmann ratio B/A of the device's paired rounds of the first
// metric, the signed-rank test's own estimate), of the regime analysed. It
// draws nothing for a single device.
type lanesPane struct {
	st     *Styles
	metric string // the metric the lanes' Δ% is of (the analysis' first)
	regime int    // > 0: the Δ% are of this regime only (sessions.ChooseRegime)
	lanes  []*lane
	index  map[string]*lane
	width  int
	height int
}

// newLanesPane starts with the lanes of devs (a pool's devices, or
// nothing: lanes appear as trials name their devices).
func newLanesPane(st *Styles, devs []string) lanesPane {
	p := lanesPane{st: st, index: map[string]*lane{}}
	if len(devs) > 1 {
		for _, id := range devs {
			p.lane(id)
		}
	}
	return p
}

// lane returns the lane of id, added if new.
func (p *lanesPane) lane(id string) *lane {
	if l, ok := p.index[id]; ok {
		return l
	}
	l := &lane{id: id, state: laneWaiting, delta: math.NaN()}
	p.lanes = append(p.lanes, l)
	p.index[id] = l
	return l
}

// SetSize sets the pane's area: a title line and a line per lane.
func (p *lanesPane) SetSize(w, h int) { p.width, p.height = w, h }

// Len is the number of lanes.
func (p lanesPane) Len() int { return len(p.lanes) }

// Pool reports whether there is more than one lane to show.
func (p lanesPane) Pool() bool { return len(p.lanes) > 1 }

// Update folds the events into the lanes (trial starts and trials by
// their device, the pool's settings (its devices), its device events
// (offline, back, left) and the end) and takes each device's Δ% from the
// analysis shown.
func (p lanesPane) Update(msg tea.Msg) (lanesPane, tea.Cmd) {
	if shown, ok := msg.(analysisShownMsg); ok {
		p.shown(shown.panel)
		return p, nil
	}
	applied, ok := msg.(eventsAppliedMsg)
	if !ok {
		return p, nil
	}
	for _, ev := range applied.events {
		switch {
		case ev.Type == lab.EventTrial && ev.Trial != nil && ev.Trial.Device != "":
			p.trial(ev.Trial)
		case ev.Type == lab.EventSettings && ev.Settings != nil && ev.Settings.Detail["devices"] != "":
			if devs := strings.Split(ev.Settings.Detail["devices"], ","); len(devs) > 1 {
				for _, id := range devs {
					p.lane(id)
				}
			}
		case ev.Type == lab.EventStart && ev.Start != nil && ev.Start.Device != "":
			l := p.lane(ev.Start.Device)
			st := *ev.Start
			l.now = &st
			l.state = laneRunning
		case ev.Type == lab.EventDevice && ev.Device != nil && ev.Device.Device != "":
			l := p.lane(ev.Device.Device)
			switch ev.Device.State {
			case lab.DeviceOffline:
				l.state = laneOffline
			case lab.DeviceLeft:
				l.state, l.now = laneLeft, nil
			case lab.DeviceBack:
				l.state = laneRunning
			}
		case ev.Type == lab.EventEnd:
			for _, l := range p.lanes {
				l.now = nil
				if l.state != laneOffline && l.state != laneLeft {
					l.state = laneDone
				}
			}
		}
	}
	return p, nil
}

// shown takes each device's paired rounds and Δ% from pd's pool analysis
// (none without one: fewer than two devices with pairs yet).
func (p *lanesPane) shown(pd panelData) {
	p.metric, p.regime = pd.poolMetric, 0
	if pd.regimePick >= 0 && len(pd.regimes) > 1 {
		p.regime = pd.regimePick + 1
	}
	for _, l := range p.lanes {
		l.pairs, l.delta, l.disagrees = 0, math.NaN(), false
	}
	if pd.pool == nil {
		return
	}
	for _, d := range pd.pool.Devices {
		l, ok := p.index[d.Device]
		if !ok {
			continue // a trial without a device, before the pool named its own
		}
		l.pairs, l.disagrees = d.N, d.Device == pd.pool.Disagrees
		if e := d.Estimate(); e.Defined() {
			l.delta = float64(e)
		}
	}
}

func (p *lanesPane) trial(t *lab.Trial) {
	l := p.lane(t.Device)
	l.trials++
	l.last = *t
	if l.now != nil && l.now.Round == t.Round && l.now.Arm == t.Arm {
		l.now = nil
	}
	if l.state == laneWaiting {
		l.state = laneRunning
	}
	if t.Status != lab.StatusOK {
		l.failed++
	}
}

// armLetter is an arm as the lanes show it: its letter (A, B, C...; the
// control is A, the treatment B), or the arm itself when it has none.
func armLetter(arm string) string {
	if i, ok := lab.ArmIndex(arm); ok {
		return string(rune('A' + i))
	}
	return arm
}

// View draws the title and a line per lane, as many as fit.
func (p lanesPane) View() string {
	if !p.Pool() || p.height <= 0 {
		return ""
	}
	st, w := p.st, p.width
	title := fmt.Sprintf("devices · %d in the pool", len(p.lanes))
	if p.metric != "" {
		title += " · Δ% of " + p.metric + ": Hodges–Lehmann B/A of each device's paired rounds"
		if p.regime > 0 {
			title += fmt.Sprintf(" of regime %d", p.regime)
		}
	}
	lines := []string{st.PanelTitle.Render(truncate(title, w))}
	idW := 0
	for _, l := range p.lanes {
		idW = max(idW, len([]rune(l.id)))
	}
	idW = min(idW, 24)
	for i, l := range p.lanes {
		if len(lines) >= p.height {
			lines[len(lines)-1] = st.Muted.Render(fmt.Sprintf("  … %d more devices", len(p.lanes)-i+1))
			break
		}
		now := "—"
		if l.now != nil {
			now = fmt.Sprintf("r%d %s", l.now.Round, armLetter(l.now.Arm))
			if l.now.Warmup {
				now += " warm"
			}
		}
		last := "—"
		if l.trials > 0 {
			last = fmt.Sprintf("#%d r%d %s", l.last.Index, l.last.Round, armLetter(l.last.Arm))
			if l.last.Status != lab.StatusOK {
				last += " " + l.last.Status
			}
		}
		runs := fmt.Sprintf("%d trials", l.trials)
		if l.trials == 1 {
			runs = "1 trial"
		}
		if l.failed > 0 {
			runs += fmt.Sprintf(", %d failed", l.failed)
		}
		if l.disagrees {
			runs += " · disagrees (see warnings)"
		}
		delta := "Δ —"
		if !math.IsNaN(l.delta) {
			delta = fmt.Sprintf("Δ %s (%d pairs)", fmtPctShort(l.delta), l.pairs)
		}
		line := truncate(fmt.Sprintf("%s %-8s now %-9s last %-14s %-19s %s", pad(l.id, idW), l.state, now, last, delta, runs), w)
		switch l.state {
		case laneOffline, laneLeft:
			line = st.Error.Render(line)
		case laneWaiting, laneDone:
			line = st.Muted.Render(line)
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}
