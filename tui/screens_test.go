package tui

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
)

// TestPauseNoticeClearsOnResume: "pausing after the round in progress"
// stays while paused and is replaced when the run resumes.
func TestPauseNoticeClearsOnResume(t *testing.T) {
	m, _, _, _ := liveModel(t, 80, 24)
	press(t, m, "p")
	if m.dash.status != "pausing after the round in progress" {
		t.Fatalf("status %q after p", m.dash.status)
	}
	m.Update(eventsArrivedMsg{stream: 1, events: []lab.Event{{Type: lab.EventToggle, Toggle: &lab.Toggle{What: "pause", From: "running", To: "paused", Round: 2}}}})
	if !m.dash.state.paused || !strings.Contains(m.dash.status, "pausing") {
		t.Fatalf("paused %v, status %q", m.dash.state.paused, m.dash.status)
	}
	press(t, m, "p")
	if m.dash.status != "session: /tmp/s.jsonl" {
		t.Errorf("status %q after resuming", m.dash.status)
	}
	// A resume recorded by the runner (from anywhere) clears it too.
	m.dash.status = "pausing after the round in progress"
	m.Update(eventsArrivedMsg{stream: 1, events: []lab.Event{{Type: lab.EventToggle, Toggle: &lab.Toggle{What: "resume", From: "paused", To: "running", Round: 3}}}})
	if strings.Contains(screenText(m), "pausing") {
		t.Errorf("stale pause notice:\n%s", screenText(m))
	}
}

// TestStoppingACheckSaysSo: a check writes no session, so stopping it
// does not speak of finishing one.
func TestStoppingACheckSaysSo(t *testing.T) {
	m, _, _, _ := liveModel(t, 80, 24)
	c := m.newCheckDash()
	c.abort(false)
	if c.status != "stopping the check…" {
		t.Errorf("check abort status %q", c.status)
	}
	m.dash.abort(false)
	if !strings.Contains(m.dash.status, "finishing the session file") {
		t.Errorf("run abort status %q", m.dash.status)
	}
}

func TestStabilityCollectsBeforeJudging(t *testing.T) {
	var ps []lab.ProbeSample
	for i := range 12 {
		ps = append(ps, lab.ProbeSample{T: float64(i), MFLOPS: 1000 + float64(i%3)})
		line, details := stabilitySummary(ps)
		if i < 9 {
			if want := "collecting (" + strconv.Itoa(i+1) + "/10)"; !strings.HasPrefix(line, want) || details != nil {
				t.Errorf("%d samples: %q %q, want %q and no verdict", i+1, line, details, want)
			}
		} else if !strings.HasPrefix(line, "stable") && !strings.HasPrefix(line, "unstable") {
			t.Errorf("%d samples: %q, want a verdict", i+1, line)
		}
	}
}

func TestCIScaleSteady(t *testing.T) {
	ms := func(lo, hi float64) []metricPanel {
		return []metricPanel{{ciLow: lo, ciHigh: hi, deltaPct: (lo + hi) / 2}}
	}
	// Each analysis' CI, and the axis it gets.
	cases := []struct{ lo, hi, want float64 }{
		{-40, 60, 100}, // first analysis: wide
		{-8, 12, 50},   // needs 20: fits half of 50, narrows one step only
		{-9, 11, 50},   // steady
		{-4, 6, 20},    // needs 10: fits half of 20
		{-4, 6, 20},
		{-3, 5.5, 20}, // wavers around a step: no back and forth
		{-3, 4.5, 10}, // needs 5: fits half of 10
		{-2, 4.9, 10},
		{-1, 12, 20}, // widens at once
	}
	cur := 0.0
	for i, c := range cases {
		cur = nextCIScale(cur, ms(c.lo, c.hi))
		if cur != c.want {
			t.Errorf("step %d (CI %g..%g): scale %g, want %g", i, c.lo, c.hi, cur, c.want)
		}
	}
}

func TestMFLOPSBand(t *testing.T) {
	for _, c := range []struct {
		xs         []float64
		mean, band float64
	}{
		{[]float64{1000, 1004, 996}, 1000, 5},  // 0.4% of noise on a ±5% axis
		{[]float64{1000, 1080, 920}, 1000, 10}, // widens only when needed
		{[]float64{1000, 1500, 500}, 1000, 50},
		{[]float64{100, 100, 400}, 200, 100},
		{[]float64{0, 0}, 0, 0},
	} {
		mean, band := mflopsBand(c.xs)
		if math.Abs(mean-c.mean) > 1e-9 || band != c.band {
			t.Errorf("%v: mean %g band %g, want %g %g", c.xs, mean, band, c.mean, c.band)
		}
	}
}

func TestCIRangeFitsEightyColumns(t *testing.T) {
	for x, want := range map[float64]string{255.094: "+255%", -12.345: "-12.3%", 1.234: "+1.23%", math.NaN(): "—"} {
		if got := fmtPctShort(x); got != want {
			t.Errorf("fmtPctShort(%g) = %q, want %q", x, got, want)
		}
	}
	st := NewStyles(true, true)
	pd := panelData{confidence: 0.95, metrics: []metricPanel{{name: "startup_ms", deltaPct: 265.1, ciLow: 255.09, ciHigh: 275.08, verdict: "regression"}}}
	p := newCIPane(&st, panelData{})
	p.SetSize(80, 3)
	p, _ = p.Update(analysisShownMsg{panel: pd})
	lines := viewLines(p.View())
	for _, l := range lines {
		if strings.Contains(l, "…") {
			t.Errorf("cut at 80 columns: %q", l)
		}
	}
	if l := lines[1]; !strings.Contains(l, "[+255%, +275%]") || !strings.Contains(l, "regression") {
		t.Errorf("CI line %q", l)
	}
}
