package tui

import (
	"encoding/json"
	"fmt"
	"github.com/perflab/perflab/analysis"
	"sort"
	"strings"

	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/engine"
)

// runState accumulates a session's events: what the analysis is computed
// from and the run's settings. Both a live run and a replay feed it. The
// trials, metric inputs, counts and progress come from the engine's Fold,
// the one fold every view uses; runState adds what only the dashboard
// shows (the log, live settings). The probe samples are the chart pane's.
type runState struct {
	*engine.Fold
	device lab.DeviceInfo
	plan   lab.Experiment

	log        []string // toggles, notes, settings, in order
	order      string
	controls   lab.Controls
	paused     bool
	end        *lab.End
	lastT      float64
	mismatches []string
	// events are the trials, toggles and notes, in order: what the
	// regimes (sessions.Regimes) are drawn from.
	events []lab.Event
}

func newRunState(dev lab.DeviceInfo, plan lab.Experiment) *runState {
	return &runState{
		Fold:   engine.NewFold(&plan),
		device: dev, plan: plan, order: plan.Order, controls: plan.Controls,
	}
}

// apply adds one event to the state.
func (s *runState) apply(ev lab.Event) {
	s.Fold.Add(ev)
	switch ev.Type {
	case lab.EventTrial, lab.EventToggle, lab.EventNote:
		s.events = append(s.events, ev)
	}
	if ev.T > s.lastT {
		s.lastT = ev.T
	}
	switch ev.Type {
	case lab.EventSettings:
		if ev.Settings == nil {
			return
		}
		st := ev.Settings
		if st.Order != "" {
			s.order = st.Order
		}
		if st.Controls != nil {
			s.controls = *st.Controls
		}
		s.mismatches = append(s.mismatches, st.Mismatches...)
		var parts []string
		if st.Order != "" {
			parts = append(parts, "order "+st.Order)
		}
		if st.Controls != nil {
			parts = append(parts, "controls "+controlsSummary(*st.Controls))
		}
		if st.Profile != nil {
			name := st.Profile.Name
			if name == "" {
				name = "inline"
			}
			parts = append(parts, "governor "+name)
		}
		if len(st.Mismatches) > 0 {
			parts = append(parts, fmt.Sprintf("%d read-back mismatches", len(st.Mismatches)))
		}
		if len(parts) == 0 {
			break
		}
		if st.Device != "" { // a pool's device set up unlike the others
			s.logf(ev.T, "settings on %s: %s", st.Device, strings.Join(parts, ", "))
		} else {
			s.logf(ev.T, "settings: %s", strings.Join(parts, ", "))
		}
	case lab.EventToggle:
		if ev.Toggle == nil {
			return
		}
		tg := ev.Toggle
		switch tg.What {
		case "order":
			s.order = tg.To
		case "pause":
			s.paused = true
		case "resume":
			s.paused = false
		}
		// Control toggles carry JSON values; the settings event that
		// follows them carries the new controls.
		if tg.From != "" {
			s.logf(ev.T, "%s: %s → %s from round %d", tg.What, unquote(tg.From), unquote(tg.To), tg.Round)
		} else {
			s.logf(ev.T, "%s: %s from round %d", tg.What, unquote(tg.To), tg.Round)
		}
	case lab.EventNote:
		if ev.Note != nil {
			s.logf(ev.T, "note: %s", ev.Note.Text)
		}
	case lab.EventEnd:
		if ev.End != nil {
			e := *ev.End
			s.end = &e
			msg := "end: " + e.Reason
			if e.Error != "" {
				msg += ": " + e.Error
			}
			if e.Stop != "" {
				msg += "; stopped: " + e.Stop
			}
			s.logf(ev.T, "%s", msg)
		}
	}
}

func (s *runState) logf(t float64, layout string, args ...any) {
	s.log = append(s.log, fmt.Sprintf("%s %s", format.Clock(t), fmt.Sprintf(layout, args...)))
}

// unquote shows a JSON string value without its quotes.
func unquote(v string) string {
	var s string
	if json.Unmarshal([]byte(v), &s) == nil {
		return s
	}
	return v
}

// inputs snapshots the counted samples for the analysis: the fold's own
// inputs (engine.Fold's Inputs, what perflab report analyses, a pool's
// Strata and PairStrata included). The fold's slices are capacity-clipped,
// so trials arriving while the analysis runs on another goroutine never
// change them.
func (s *runState) inputs() []analysis.MetricInput { return s.Fold.Inputs() }

// eventsSoFar snapshots the trials, toggles and notes, capacity-clipped
// like inputs.
func (s *runState) eventsSoFar() []lab.Event { return s.events[:len(s.events):len(s.events)] }

// controlsSummary lists the controls that are on, for a log line.
func controlsSummary(c lab.Controls) string {
	var on []string
	for _, d := range controlDefs {
		if v := d.get(c); v != "" && v != "off" {
			if v == "on" {
				on = append(on, d.key)
			} else {
				on = append(on, d.key+"="+v)
			}
		}
	}
	if len(on) == 0 {
		return "none"
	}
	sort.Strings(on)
	return strings.Join(on, " ")
}
