package plot

import (
	"bytes"
	"flag"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/study"
)

var outDir = flag.String("out", "", "also write the figures to this directory, to look at them")

// testSession is a run of 20 rounds on a simulated device: a stability
// check first, random order, switched to fixed order at round 8 and
// kill_app turned on at round 12; the treatment is 5% slower.
func testSession() *sessions.Session {
	exp := &lab.Experiment{Device: "sim:pixel", Trials: 20, Order: lab.OrderRandom, Alpha: 0.05, Confidence: 0.95,
		Builds: map[string]lab.Build{lab.ArmControl: {Name: "feed v1", App: "feed"}, lab.ArmTreatment: {Name: "feed v2", App: "feed"}}}
	s := &sessions.Session{Header: sessions.NewHeader("perflab test", lab.DeviceInfo{ID: "sim:pixel", Backend: "sim"}, exp)}
	for i := range 30 {
		s.Events = append(s.Events, lab.Event{Type: lab.EventProbe, T: float64(i),
			Probe: &lab.ProbeSample{T: float64(i), MFLOPS: 5000 + 20*math.Sin(float64(i))}})
	}
	idx := 0
	for r := range 20 {
		if r == 8 {
			s.Events = append(s.Events, lab.Event{Type: lab.EventToggle, Toggle: &lab.Toggle{What: "order", From: "random", To: "fixed", Round: 8}})
		}
		if r == 12 {
			s.Events = append(s.Events, lab.Event{Type: lab.EventToggle, Toggle: &lab.Toggle{What: "kill_app", From: "off", To: "on", Round: 12}})
		}
		arms := []string{lab.ArmControl, lab.ArmTreatment}
		if r%3 == 1 && r < 8 {
			arms[0], arms[1] = arms[1], arms[0]
		}
		for _, a := range arms {
			v := 700 + 3*float64(idx%5)
			if a == lab.ArmTreatment {
				v *= 1.05
			}
			s.Events = append(s.Events, lab.Event{Type: lab.EventTrial, T: 30 + float64(idx), Trial: &lab.Trial{
				Index: idx, Round: r, Arm: a, Build: a, Status: lab.StatusOK,
				Metrics: []lab.Metric{{Name: "startup_ms", Value: v, Unit: "ms", Better: "lower"}}}})
			idx++
		}
	}
	return s
}

// render draws f in both formats, checks the PNG decodes at the figure's
// size, and returns the SVG text.
func render(t *testing.T, name string, f *Figure, panels int) string {
	t.Helper()
	if len(f.Plots) != panels {
		t.Errorf("%s: %d panels, want %d", name, len(f.Plots), panels)
	}
	var svg, pngBuf bytes.Buffer
	if err := f.Write(&svg, "svg"); err != nil {
		t.Fatal(err)
	}
	if err := f.Write(&pngBuf, "png"); err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(pngBuf.Bytes()))
	if err != nil {
		t.Fatalf("%s: PNG: %v", name, err)
	}
	cols, rows := 2, (panels+1)/2
	if panels == 1 {
		cols = 1
	}
	if cfg.Width != cols*660 || cfg.Height != rows*396 {
		t.Errorf("%s: PNG %dx%d, want %dx%d", name, cfg.Width, cfg.Height, cols*660, rows*396)
	}
	if *outDir != "" {
		for ext, b := range map[string][]byte{".svg": svg.Bytes(), ".png": pngBuf.Bytes()} {
			if err := os.WriteFile(filepath.Join(*outDir, name+ext), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return svg.String()
}

func contains(t *testing.T, name, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s: SVG lacks %q", name, w)
		}
	}
}

func TestSessionFigure(t *testing.T) {
	s := testSession()
	rep := analysis.Compare(sessions.MetricInputs(s.Events), analysis.DefaultOptions())
	f, err := Session(s, rep)
	if err != nil {
		t.Fatal(err)
	}
	// startup_ms by trial and per arm, Δ%, MFLOPS.
	svg := render(t, "session", f, 4)
	contains(t, "session", svg, "startup_ms by trial", "startup_ms per arm", "control (feed v1)", "treatment (feed v2)",
		"toggle", "order→fixed", "kill_app on", "Δ% B vs A the verdict rests on", "regression", "MFLOPS", "mean ±2%")

	empty := &sessions.Session{Header: s.Header}
	if _, err := Session(empty, analysis.Report{}); err == nil || !strings.Contains(err.Error(), "no counted trials") {
		t.Errorf("empty session: %v", err)
	}
}

func TestSave(t *testing.T) {
	f := &Figure{Plots: []*plot.Plot{MFLOPSPlot([]lab.ProbeSample{{T: 0, MFLOPS: 100}, {T: 1, MFLOPS: 101}}, "check")}}
	dir := t.TempDir()
	for _, name := range []string{"a.svg", "a.PNG"} {
		if err := f.Save(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := f.Save(filepath.Join(dir, "a.pdf")); err == nil || !strings.Contains(err.Error(), "a.pdf: plot file must end in .svg or .png") {
		t.Errorf("pdf: %v", err)
	}
	if err := (&Figure{}).Write(&bytes.Buffer{}, "svg"); err == nil {
		t.Error("empty figure drew")
	}
}

func TestStudyFigures(t *testing.T) {
	v := &study.Validation{Device: "sim:pixel", Metric: "startup_ms", Alpha: 0.05, Confidence: 0.95,
		AA:         study.RateResult{Experiments: 40, FalsePositives: 2, Rate: 0.05, CILow: 0.006, CIHigh: 0.169},
		Effect:     study.EffectResult{Experiments: 40, EffectPct: 1, Detected: 36, Rate: 0.9, CILow: 0.763, CIHigh: 0.972},
		TrialTrend: study.TrialTrend{Rho: 0.1, P: 0.6, Means: []analysis.Float{1.001, 0.998, 1.0005, 1.001}}}
	svg := render(t, "validate", Validation(v), 2)
	contains(t, "validate", svg, "A/A false positives", "2 of 40", "detected +1%", "α = 0.05", "80% power", "mean by trial number")

	o := &study.Order{Tests: []study.OrderTest{
		{Name: "control/startup_ms", Metric: "startup_ms", P: 0.001, RedFlag: true,
			Fixed: analysis.Interval{Point: 700, Low: 690, High: 710}, Random: analysis.Interval{Point: 760, Low: 750, High: 770}},
		{Name: "treatment/startup_ms", Metric: "startup_ms", P: 0.4,
			Fixed: analysis.Interval{Point: 760, Low: 740, High: 780}, Random: analysis.Interval{Point: 765, Low: 745, High: 785}},
	}}
	svg = render(t, "order", Order(o), 2)
	contains(t, "order", svg, "control/startup_ms", "RED FLAG", "fixed", "random")
}

// TestSessionVersusFigure draws a session of three builds: every arm in
// the trial and distribution panels, and Δ% with an interval per build
// after the base.
func TestSessionVersusFigure(t *testing.T) {
	exp := lab.Experiment{Device: "sim:pixel", Trials: 6, Order: lab.OrderAlternate}
	exp.SetBuilds([]lab.Build{{Name: "v1"}, {Name: "v2"}, {Name: "v3"}})
	s := &sessions.Session{Header: sessions.Header{ID: "s3", Plan: exp}}
	for i := range 18 {
		arm := exp.ArmKeys()[i%3]
		v := map[string]float64{"A": 700, "B": 740, "C": 660}[arm] + float64(i%5)
		s.Events = append(s.Events, lab.Event{Type: lab.EventTrial, T: float64(i), Trial: &lab.Trial{Index: i, Round: i / 3, Arm: arm,
			Build: exp.Builds[arm].Name, Order: lab.OrderAlternate, Status: lab.StatusOK,
			Metrics: []lab.Metric{{Name: "startup_ms", Value: v, Unit: "ms"}}}})
	}
	v := analysis.CompareVersus(sessions.ArmInputs(s.Events, 3), analysis.DefaultOptions())
	f, err := SessionVersus(s, v.Comparisons)
	if err != nil {
		t.Fatal(err)
	}
	svg := render(t, "versus", f, 3)
	contains(t, "versus", svg, "A (v1)", "B (v2)", "C (v3)", "each build vs A", "startup_ms B", "startup_ms C")
}

// TestEnvelope: a short series is drawn whole; a long one as each
// bucket's lowest and highest build, in order, so a one-build spike and
// a step stay visible.
func TestEnvelope(t *testing.T) {
	short := []float64{3, math.NaN(), 5}
	if got := envelope(short, 10); len(got) != 2 || got[1].X != 2 {
		t.Errorf("short: %v", got)
	}
	long := make([]float64, 10000)
	for i := range long {
		long[i] = 100
		if i >= 6000 {
			long[i] = 110
		}
	}
	long[1234] = 500
	got := envelope(long, 1000)
	if len(got) > 1000 {
		t.Fatalf("%d points", len(got))
	}
	spike, step := false, false
	for i, p := range got {
		if i > 0 && p.X <= got[i-1].X {
			t.Fatalf("points out of order at %d", i)
		}
		spike = spike || p.Y == 500 && p.X == 1234
		step = step || p.Y == 110 && p.X >= 6000 && p.X < 6020
	}
	if !spike || !step {
		t.Errorf("spike %v, step %v", spike, step)
	}
}
