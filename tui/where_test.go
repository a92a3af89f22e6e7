package tui

import (
	"context"
	"fmt"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/bisect"
	"github.com/perflab/perflab/sessions/engine"
)

// profiledReplay replays a real profiled sim session (16 rounds; B's
// feed.decodeImage 20% slower) with its where view open.
func profiledReplay(t *testing.T, w, h int) *Model {
	t.Helper()
	exp := bisect.SimTemplate(7)
	exp.Trials, exp.Profile = 16, true
	exp.Builds = map[string]lab.Build{lab.ArmControl: {Name: "feed", App: "feed"},
		lab.ArmTreatment: {Name: "feed, decode +20%", App: "feed", Effect: &lab.FunctionEffect{Function: "feed.decodeImage", Pct: 20}}}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if _, err := engine.RunSession(context.Background(), bisect.SimLab(), engine.Plan{Experiment: exp, Path: path, Tool: "test"}); err != nil {
		t.Fatal(err)
	}
	s, err := sessions.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	m := sized(NewReplay(Options{Now: fixedNow}, s.Header.Device, s.Header.Plan, s.Events, 10, nil), w, h)
	m.SetReplayPath(path)
	press(t, m, "G", "w")
	return m
}

// TestWhereView: the where view of a profiled session lists the slowed
// function first as a regression with its interval, its caller, the
// family its verdicts belong to, the phase filter narrows it (an
// exploratory view, which says so), and w closes it; its golden is at
// 80×24.
func TestWhereView(t *testing.T) {
	m := profiledReplay(t, 80, 24)
	got := screenText(m)
	lines := strings.Split(got, "\n")
	if !strings.Contains(lines[2], "where the time went · self · all phases · 16 rounds") ||
		!strings.Contains(lines[3], "declared family (self time, all phases): false discovery rate ≤ 0.05") ||
		!strings.HasPrefix(lines[4], "▸ feed.decodeImage") || !strings.Contains(lines[4], "regression") ||
		!strings.Contains(got, "callers: feed.image.run") || !strings.Contains(strings.Join(strings.Fields(got), " "), "Δ +31.49 ms/round (the launch) · reported functions: 94% of it") {
		t.Errorf("where view:\n%s", got)
	}
	// The golden skips the progress line: its elapsed time is the real
	// run's, which a loaded host stretches.
	checkGolden(t, "where-80x24", strings.Join(append(lines[:1:1], lines[2:]...), "\n"))
	press(t, m, "f")
	// A phase is an exploratory view, and says so; its total is its own.
	if got := strings.Join(strings.Fields(screenText(m)), " "); !strings.Contains(got, "phase first_frame") || strings.Contains(got, "libc.read") ||
		!strings.Contains(got, "exploratory view: not corrected across views") || !strings.Contains(got, "ms/round (phase first_frame)") {
		t.Errorf("phase first_frame:\n%s", got)
	}
	// Cumulative time: exploratory too; only the outermost reported
	// functions are summed.
	press(t, m, "t")
	if got := strings.Join(strings.Fields(screenText(m)), " "); !strings.Contains(got, "cumulative") || !strings.Contains(got, "exploratory view") ||
		!strings.Contains(got, "outermost reported: 100% of it") {
		t.Errorf("cumulative, phase first_frame:\n%s", got)
	}
	press(t, m, "w")
	if got := screenText(m); strings.Contains(got, "where the time went") || !strings.Contains(got, "p-values") {
		t.Errorf("closed:\n%s", got)
	}
	// esc closes it too; ! swaps it for the notes view.
	press(t, m, "w", "esc")
	if got := screenText(m); strings.Contains(got, "where the time went") {
		t.Errorf("esc did not close the where view:\n%s", got)
	}
	press(t, m, "w", "!")
	if got := screenText(m); strings.Contains(got, "where the time went") || !strings.Contains(got, "warnings & notes in full") {
		t.Errorf("! over the where view:\n%s", got)
	}
}

// TestCIScaleBeyondSteps: intervals wider than the largest axis step get
// a round axis (a 1–2–5 multiple of a power of ten), not their own width.
func TestCIScaleBeyondSteps(t *testing.T) {
	for _, tc := range []struct{ hi, want float64 }{{848.74, 1000}, {1500, 2000}, {4200, 5000}} {
		if got := ciScale([]metricPanel{{ciLow: -1, ciHigh: tc.hi, deltaPct: 1}}); got != tc.want {
			t.Errorf("interval up to %g%%: axis ±%g%%, want ±%g%%", tc.hi, got, tc.want)
		}
	}
}

// TestSuiteRowsChangedFirst: a suite's dashboard lists the changed
// benchmarks on top, then those still undecided, then those without a
// test (issue 35: the regression was below the fold); another experiment
// keeps its metrics' order.
func TestSuiteRowsChangedFirst(t *testing.T) {
	pair := func(name string, a, b []float64) analysis.MetricInput {
		in := analysis.MetricInput{Name: name, Unit: "ns/op", Samples: [][]float64{a, b}}
		for i := range a {
			in.Pairs = append(in.Pairs, analysis.Pair{A: a[i], B: b[i]})
		}
		return in
	}
	ins := []analysis.MetricInput{
		pair("Const", []float64{8, 8, 8, 8, 8, 8, 8, 8}, []float64{8, 8, 8, 8, 8, 8, 8, 8}),
		pair("Slower", []float64{10, 11, 10, 12, 11, 10, 11, 12}, []float64{13, 14, 13, 15, 14, 13, 14, 15}),
		pair("Noisy", []float64{10, 20, 10, 20, 10, 20, 10, 20}, []float64{20, 10, 10, 20, 20, 10, 20, 10}),
	}
	plan := &lab.Experiment{Suite: &lab.SuiteInfo{Module: "m"}}
	var names []string
	for _, m := range analyzeSession(ins, nil, plan, analysis.DefaultOptions()).metrics {
		names = append(names, m.name)
	}
	if strings.Join(names, ",") != "Slower,Noisy,Const" {
		t.Errorf("suite rows %v, want Slower, Noisy, Const", names)
	}
	names = nil
	for _, m := range analyzeSession(ins, nil, &lab.Experiment{}, analysis.DefaultOptions()).metrics {
		names = append(names, m.name)
	}
	if strings.Join(names, ",") != "Const,Slower,Noisy" {
		t.Errorf("run rows %v", names)
	}
}

// TestSuiteRowsScroll: more metrics than the panels' rows scroll with
// ↓ and pgdn, the panel saying which are shown; ↑ at the top and ↓ at
// the bottom stay put.
func TestSuiteRowsScroll(t *testing.T) {
	var ins []analysis.MetricInput
	for i := range 20 {
		in := analysis.MetricInput{Name: fmt.Sprintf("Bench%02d", i), Unit: "ns/op", Samples: [][]float64{nil, nil}}
		for r := range 8 {
			a, b := 10+float64(r%3), 10+float64((r+i)%4)
			in.Samples[0], in.Samples[1] = append(in.Samples[0], a), append(in.Samples[1], b)
			in.Pairs = append(in.Pairs, analysis.Pair{A: a, B: b})
		}
		ins = append(ins, in)
	}
	plan := lab.Experiment{Suite: &lab.SuiteInfo{Module: "m"}}
	st := NewStyles(true, true)
	f := newFeed(&st, simInfo(), plan, analyzer{}, 0)
	f.panel = analyzeSession(ins, nil, &plan, analysis.DefaultOptions())
	msg := analysisShownMsg{f.panel}
	f.ci, _ = f.ci.Update(msg)
	f.seq, _ = f.seq.Update(msg)
	f.p, _ = f.p.Update(msg)
	view := func() string { return ansi.Strip(f.panels(80, 20)) }
	if v := view(); !strings.Contains(v, "metrics 1–6 of 20 · ↑/↓ pgup/pgdn scroll") {
		t.Fatalf("first page:\n%s", v)
	}
	press := func(k string) {
		code := map[string]rune{"down": tea.KeyDown, "up": tea.KeyUp, "pgdown": tea.KeyPgDown}[k]
		if ok, _ := f.viewKey(tea.KeyPressMsg{Code: code}); !ok {
			t.Fatalf("%s not taken", k)
		}
	}
	press("up")
	press("down")
	if v := view(); !strings.Contains(v, "metrics 2–7 of 20") {
		t.Errorf("after ↓:\n%s", v)
	}
	for range 5 {
		press("pgdown")
	}
	if v := view(); !strings.Contains(v, "metrics 15–20 of 20") || !strings.Contains(v, f.panel.metrics[19].name) {
		t.Errorf("after pgdn to the end:\n%s", v)
	}
}

// TestControlsProfileForAFunctionEffect: a build whose change is in one
// function turns the profiles row on (the where view needs them).
func TestControlsProfileForAFunctionEffect(t *testing.T) {
	exp := synthPlan(10)
	if p := newControlsPane(&Styles{}, simInfo(), exp, nil, false); p.profile {
		t.Error("profiles on without a function effect")
	}
	b := exp.Builds[lab.ArmTreatment]
	b.Effect = &lab.FunctionEffect{Function: "feed.decodeImage", Pct: 10}
	exp.Builds[lab.ArmTreatment] = b
	if p := newControlsPane(&Styles{}, simInfo(), exp, nil, false); !p.profile {
		t.Error("profiles off for a build with a function effect")
	}
}

// TestCIScaleOfTheRowsShown: when a suite's metrics scroll, the axis fits
// the rows shown, not a noisy one below the fold (issue 35: ±200%).
func TestCIScaleOfTheRowsShown(t *testing.T) {
	var ms []metricPanel
	for i := range 6 {
		ms = append(ms, metricPanel{name: fmt.Sprintf("B%d", i), deltaPct: 1, ciLow: 0.5, ciHigh: 1.5, verdict: "regression"})
	}
	ms = append(ms, metricPanel{name: "Noisy", deltaPct: 40, ciLow: -150, ciHigh: 180, verdict: "inconclusive"})
	st := NewStyles(true, true)
	p := newCIPane(&st, panelData{metrics: ms, paired: true})
	p, _ = p.Update(analysisShownMsg{panelData{metrics: ms, paired: true}})
	p.SetSize(80, 3)
	top := ansi.Strip(p.View())
	if !strings.Contains(top, "-2%") || strings.Contains(top, "200%") {
		t.Errorf("first rows' axis:\n%s", top)
	}
	p.SetOffset(4)
	if bottom := ansi.Strip(p.View()); !strings.Contains(bottom, "200%") {
		t.Errorf("the noisy row's axis:\n%s", bottom)
	}
}
