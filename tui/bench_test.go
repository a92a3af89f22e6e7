package tui

import (
	"strconv"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/engine"
)

// tenThousand returns a live model holding a 10,000-trial session (5,000
// rounds) with its analysis computed, as the dashboard shows it.
func tenThousand(b *testing.B, w, h int) *Model {
	m, _, _, _ := liveModel(b, w, h)
	evs := synthEvents(4999, 120, false)
	m.dash.apply(evs)
	if n := len(m.dash.state.Trials()); n != 10000 {
		b.Fatalf("%d trials", n)
	}
	m.dash.reported(reportComputedMsg{stream: m.dash.Stream(), version: m.dash.state.Version(),
		panel: analyze(m.dash.state.inputs(), engine.Options(&m.exp))})
	return m
}

// BenchmarkDashboardView measures one frame of the live dashboard with
// 10,000 trials in the session. Target: under 16 ms.
func BenchmarkDashboardView(b *testing.B) {
	for _, size := range [][2]int{{80, 24}, {120, 40}, {200, 60}} {
		b.Run(sizeName(size), func(b *testing.B) {
			m := tenThousand(b, size[0], size[1])
			b.ResetTimer()
			for b.Loop() {
				_ = m.View()
			}
		})
	}
}

// BenchmarkApplyTrial measures what Update spends on one trial event.
func BenchmarkApplyTrial(b *testing.B) {
	evs := synthEvents(4999, 0, false)
	b.ResetTimer()
	for b.Loop() {
		s := newRunState(simInfo(), synthPlan(5000))
		for _, ev := range evs {
			s.apply(ev)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/event")
}

func sizeName(s [2]int) string { return strconv.Itoa(s[0]) + "x" + strconv.Itoa(s[1]) }

// BenchmarkAnalysis measures the analysis redone after each counted
// trial at 10,000 trials (10,000 bootstrap resamples), in a tea.Cmd, off
// the frame.
func BenchmarkAnalysis(b *testing.B) {
	m := tenThousand(b, 80, 24)
	in := m.dash.state.inputs()
	b.ResetTimer()
	for b.Loop() {
		analyze(in, engine.Options(&lab.Experiment{}))
	}
}
