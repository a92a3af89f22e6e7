package tui

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/perflab/perflab/lab"
)

// metricSeries holds the counted samples of one metric, per arm, in arrival
// order. Appending is all a new trial costs.
type metricSeries struct {
	name, unit, better string
	a, b               []float64
	// ordA and ordB hold the order mode (an index into runState.orders) of
	// each value, for the order-effect test.
	ordA, ordB []uint8
}

// runState accumulates a session's events: what the dashboard shows and what
// the analysis is computed from. Both a live run and a replay feed it.
type runState struct {
	device lab.DeviceInfo
	plan   lab.Experiment

	trials   []lab.Trial
	series   []*metricSeries
	byName   map[string]*metricSeries
	probe    []lab.ProbeSample
	log      []string // toggles, notes, settings, in order
	counts   map[string]int
	warmups  int
	counted  [2]int // counted trials per arm (control, treatment)
	order    string
	controls lab.Controls
	paused   bool
	end      *lab.End
	lastT    float64
	tracker  *lab.Tracker
	// version counts the counted trials applied; the analysis is current when
	// it was computed at this version.
	version    int
	orders     []string // order modes seen in counted trials
	mismatches []string
}

func newRunState(dev lab.DeviceInfo, plan lab.Experiment) *runState {
	return &runState{
		device: dev, plan: plan, order: plan.Order, controls: plan.Controls,
		byName: map[string]*metricSeries{}, counts: map[string]int{},
		tracker: lab.NewTracker(&plan),
	}
}

// apply adds one event to the state.
func (s *runState) apply(ev lab.Event) {
	s.tracker.Add(ev)
	if ev.T > s.lastT {
		s.lastT = ev.T
	}
	switch ev.Type {
	case lab.EventTrial:
		if ev.Trial == nil {
			return
		}
		t := *ev.Trial
		s.trials = append(s.trials, t)
		s.counts[t.Status]++
		if t.Warmup {
			s.warmups++
		}
		if !t.Counted() {
			return
		}
		arm := 0
		if t.Arm == lab.ArmTreatment {
			arm = 1
		} else if t.Arm != lab.ArmControl {
			return
		}
		s.counted[arm]++
		oi := s.orderIndex(t.Order)
		for _, mt := range t.Metrics {
			ms := s.byName[mt.Name]
			if ms == nil {
				better := mt.Better
				if better == "" {
					better = "lower"
				}
				ms = &metricSeries{name: mt.Name, unit: mt.Unit, better: better}
				s.byName[mt.Name] = ms
				s.series = append(s.series, ms)
			}
			if arm == 0 {
				ms.a = append(ms.a, mt.Value)
				ms.ordA = append(ms.ordA, oi)
			} else {
				ms.b = append(ms.b, mt.Value)
				ms.ordB = append(ms.ordB, oi)
			}
		}
		s.version++
	case lab.EventProbe:
		if ev.Probe == nil {
			return
		}
		s.probe = append(s.probe, *ev.Probe)
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
		if len(parts) > 0 {
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
			s.logf(ev.T, "%s: %s → %s from round %d", tg.What, unquote(tg.From), unquote(tg.To), tg.Round+1)
		} else {
			s.logf(ev.T, "%s: %s from round %d", tg.What, unquote(tg.To), tg.Round+1)
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
			s.logf(ev.T, "%s", msg)
		}
	}
}

func (s *runState) logf(t float64, format string, args ...any) {
	s.log = append(s.log, fmt.Sprintf("%s %s", clock(t), fmt.Sprintf(format, args...)))
}

// orderIndex numbers an order mode.
func (s *runState) orderIndex(o string) uint8 {
	for i, x := range s.orders {
		if x == o {
			return uint8(i)
		}
	}
	s.orders = append(s.orders, o)
	return uint8(len(s.orders) - 1)
}

// unquote shows a JSON string value without its quotes.
func unquote(v string) string {
	var s string
	if json.Unmarshal([]byte(v), &s) == nil {
		return s
	}
	return v
}

// clock formats seconds as m:ss or h:mm:ss.
func clock(t float64) string {
	if t < 0 {
		t = 0
	}
	sec := int(t + 0.5)
	if sec >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", sec/3600, sec/60%60, sec%60)
	}
	return fmt.Sprintf("%d:%02d", sec/60, sec%60)
}

// progress returns how far the run has come.
func (s *runState) progress() lab.Progress { return s.tracker.Progress() }

// inputs snapshots the counted samples for the analysis. The slices are
// copied: the analysis runs on another goroutine while trials keep arriving.
func (s *runState) inputs() []metricInput {
	out := make([]metricInput, 0, len(s.series))
	for _, ms := range s.series {
		in := metricInput{
			name: ms.name, unit: ms.unit, better: ms.better,
			a: append([]float64(nil), ms.a...), b: append([]float64(nil), ms.b...),
		}
		if len(s.orders) > 1 {
			in.ordA = append([]uint8(nil), ms.ordA...)
			in.ordB = append([]uint8(nil), ms.ordB...)
			in.orders = len(s.orders)
		}
		out = append(out, in)
	}
	return out
}

// metricInput is one metric's samples for the analysis.
type metricInput struct {
	name, unit, better string
	a, b               []float64
	ordA, ordB         []uint8 // order mode per value, when more than one was used
	orders             int
}

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
