package tui

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/study"
)

// fakeStudy is a Backend.StartStudy that records what it was asked and
// hands out a stream the test does not need to fill: the tests send
// studyUpdatedMsg themselves.
type fakeStudy struct {
	plan StudyPlan
	ctx  context.Context
	ch   chan study.Update
}

func (f *fakeStudy) start(ctx context.Context, p StudyPlan) <-chan study.Update {
	f.plan, f.ctx = p, ctx
	f.ch = make(chan study.Update, 16)
	return f.ch
}

// selectMode moves the stepper's cursor to the mode row and cycles it to
// mode.
func selectMode(t *testing.T, m *Model, mode string) {
	t.Helper()
	for _, r := range m.controls.rows {
		if r.setting == "mode" {
			break
		}
		press(t, m, "down")
	}
	for i := 0; i < 3 && m.controls.mode != mode; i++ {
		press(t, m, "space")
	}
	if m.controls.mode != mode {
		t.Fatalf("mode %q, want %q", m.controls.mode, mode)
	}
}

// studyModel opens the stepper on sim:pixel, picks mode and starts it with
// a fake study backend, without running the stream's wait.
func studyModel(t *testing.T, w, h int, mode string) (*Model, *fakeStudy) {
	t.Helper()
	f := &fakeStudy{}
	m := sized(NewRun(Options{Backend: Backend{StartStudy: f.start}, Now: fixedNow}, simInfo(), synthPlan(10)), w, h)
	selectMode(t, m, mode)
	_, cmd := m.Update(keyPress("enter"))
	if cmd == nil {
		t.Fatal("enter started nothing")
	}
	_, start := m.Update(cmd())
	if start == nil || m.screen != screenStudy || !m.study.running() {
		t.Fatalf("screen %v: the study is not starting", m.screen)
	}
	_, wait := m.Update(start()) // studyStartedMsg; the wait is not run
	if wait == nil || f.ctx == nil {
		t.Fatal("the study did not start")
	}
	return m, f
}

func progress(phase string, i, done, total int, outcome string) study.Update {
	return study.Update{Progress: &study.Progress{Study: "validate", Phase: phase, Index: i, Done: done, Total: total,
		Outcome: outcome, Elapsed: time.Duration(done) * time.Second, ETA: time.Duration(total-done) * time.Second}}
}

// aaUpdates makes n A/A progress updates of which the indices in fp are
// false positives.
func aaUpdates(n, total int, fp ...int) []study.Update {
	var out []study.Update
	for i := 0; i < n; i++ {
		o := analysis.VerdictNoChange
		for _, k := range fp {
			if k == i {
				o = analysis.VerdictRegression
			}
		}
		out = append(out, progress("aa", i, i+1, total, o))
	}
	return out
}

func fakeValidation() *study.Validation {
	means := make([]analysis.Float, 10)
	for i := range means {
		means[i] = analysis.Float(1 + 0.002*math.Sin(float64(i)))
	}
	return &study.Validation{Device: "sim:pixel", Metric: "startup_ms", Unit: "ms", Better: "lower", Test: "mann-whitney",
		Alpha: 0.05, Confidence: 0.95, TrialsPerArm: 10, Order: "random",
		AA:     study.RateResult{Experiments: 20, FalsePositives: 1, Rate: 0.05, CILow: 0.0013, CIHigh: 0.2487},
		Effect: study.EffectResult{Experiments: 20, EffectPct: 1, Injected: true, Detected: 13, Rate: 0.65, CILow: 0.408, CIHigh: 0.846, ObservedPct: 1.04},
		Variance: study.VarianceStats{
			Control:   study.ArmVariance{Mean: 512.3, Variance: 26.1, SD: 5.11, CV: 0.00998},
			Treatment: study.ArmVariance{Mean: 512.9, Variance: 25.4, SD: 5.04, CV: 0.00983}},
		TrialTrend:   study.TrialTrend{Rho: -0.12, P: 0.74, Means: means},
		OtherMetrics: []study.MetricRate{{Metric: "frames", Experiments: 20, FalsePositives: 0, Rate: 0}},
		Warnings:     []string{"the effect was detected in 65% of experiments: under 80% power at 10 trials per arm"},
	}
}

func fakeOrder() *study.Order {
	iv := func(p, lo, hi float64) analysis.Interval {
		return analysis.Interval{Point: analysis.Float(p), Low: analysis.Float(lo), High: analysis.Float(hi)}
	}
	return &study.Order{Device: "sim:pixel", Runs: 10, TrialsPerArm: 10, OrderMatters: true, Alpha: 0.05, AlphaBonferroni: 0.025,
		Tests: []study.OrderTest{
			{Name: "control/startup_ms", Arm: "control", Metric: "startup_ms", P: 0.0002, DeltaPct: -4.1, Significant: true, RedFlag: true,
				Fixed: iv(498.2, 496.0, 500.1), Random: iv(519.4, 517.2, 521.8), Reasons: []string{"median intervals do not overlap"}},
			{Name: "treatment/startup_ms", Arm: "treatment", Metric: "startup_ms", P: 0.41, DeltaPct: 0.3,
				Fixed: iv(523.0, 520.1, 526.0), Random: iv(521.5, 519.0, 524.9)},
		},
		Conclusions: []study.OrderConclusion{{Metric: "startup_ms", Fixed: "regression", Random: "no change", DeltaPctFixed: 4.9, DeltaPctRandom: 0.4, P: 0.0002, RedFlag: true}},
		Warnings:    []string{},
	}
}

func TestStudyValidateFlow(t *testing.T) {
	m, f := studyModel(t, 100, 30, StudyValidate)
	if f.plan.Study != StudyValidate || f.plan.AA != studyAASim || f.plan.EffectPct != 1 || f.plan.Runs != 0 {
		t.Errorf("plan %+v: want validate with K=%d and the 1%% effect", f.plan, studyAASim)
	}
	if e := f.plan.Experiment; e == nil || e.Device != "sim:pixel" || e.Trials != 10 || e.Seed == 0 {
		t.Fatalf("experiment %+v", e)
	}
	if !strings.Contains(screenText(m), "starting") {
		t.Errorf("before any run the dashboard should say it is starting:\n%s", screenText(m))
	}
	_, cmd := m.Update(studyUpdatedMsg{stream: m.stream, updates: aaUpdates(20, 400, 3, 11)})
	if cmd == nil {
		t.Error("the wait was not re-armed after a message")
	}
	scr := screenText(m)
	for _, want := range []string{"A/A false positives  2 of 20 = 10.0%", "95% CI 1.2%–31.7%", "too few experiments to judge α", "20/400 runs", "ETA 6:20", "no change 18", "regression 2"} {
		if !strings.Contains(scr, want) {
			t.Errorf("screen lacks %q:\n%s", want, scr)
		}
	}
	// A message of an older stream is ignored.
	m.Update(studyUpdatedMsg{stream: m.stream - 1, updates: aaUpdates(5, 400, 0, 1, 2, 3, 4)})
	if got := m.study.tally("aa").runs; got != 20 {
		t.Errorf("%d A/A runs after a stale message, want 20", got)
	}
	// Many false positives: the CI excludes α.
	more := aaUpdates(40, 400, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
	failed := progress("effect", 0, 61, 400, "failed")
	failed.Progress.Error = "open device: boom"
	m.Update(studyUpdatedMsg{stream: m.stream, updates: append(more, failed)})
	scr = screenText(m)
	for _, want := range []string{"18 of 60", "EXCLUDES α = 0.05", "1 run failed; last: effect #1: failed (open device: boom)"} {
		if !strings.Contains(scr, want) {
			t.Errorf("screen lacks %q:\n%s", want, scr)
		}
	}
	_, cmd = m.Update(studyUpdatedMsg{stream: m.stream, updates: []study.Update{{Validation: fakeValidation()}}, closed: true})
	if cmd != nil {
		t.Error("a closed stream was waited on again")
	}
	scr = screenText(m)
	for _, want := range []string{"validate · done", "A/A false positives  1 of 20 = 5.0%", "too few experiments to judge α", "detected 13 of 20 = 65.0%", "UNDER 80% power",
		"variance, control", "trial-number trend", "no trend", "frames: 0 of 20", "the setup does not validate", "mean by trial number"} {
		if !strings.Contains(scr, want) {
			t.Errorf("result lacks %q:\n%s", want, scr)
		}
	}
	if f.ctx.Err() == nil {
		t.Error("the study's context is still live after the stream closed")
	}
	press(t, m, "esc")
	if m.screen != screenControls {
		t.Errorf("esc after the study: screen %v, want the stepper", m.screen)
	}
}

func TestStudyAbortAsks(t *testing.T) {
	m, f := studyModel(t, 80, 24, StudyValidate)
	m.Update(studyUpdatedMsg{stream: m.stream, updates: aaUpdates(3, 400)})
	press(t, m, "x")
	if !strings.Contains(screenText(m), "abort the study?") {
		t.Fatalf("x did not ask:\n%s", screenText(m))
	}
	press(t, m, "n")
	if f.ctx.Err() != nil || !m.study.running() || !strings.Contains(screenText(m), "not aborted") {
		t.Fatal("n aborted the study")
	}
	press(t, m, "esc")
	if m.screen != screenStudy {
		t.Fatal("esc left a running study")
	}
	press(t, m, "x", "y")
	if f.ctx.Err() == nil {
		t.Fatal("y did not cancel the study")
	}
	if !strings.Contains(screenText(m), "aborting") {
		t.Errorf("no aborting state:\n%s", screenText(m))
	}
	v := fakeValidation()
	v.Partial = true
	_, cmd := m.Update(studyUpdatedMsg{stream: m.stream, updates: []study.Update{{Validation: v, Err: context.Canceled}}, closed: true})
	if cmd != nil {
		t.Error("an abort without q quit the workbench")
	}
	scr := screenText(m)
	if !strings.Contains(scr, "validate · aborted") || !strings.Contains(scr, "covers the runs that finished") || m.study.err != nil {
		t.Errorf("partial result not shown as such (err %v):\n%s", m.study.err, scr)
	}
}

func TestStudyQuitWaitsForTheStream(t *testing.T) {
	m, f := studyModel(t, 80, 24, StudyOrder)
	if f.plan.Study != StudyOrder || f.plan.Runs != study.DefaultOrderRuns || f.plan.AA != 0 {
		t.Errorf("plan %+v: want order with N=%d", f.plan, study.DefaultOrderRuns)
	}
	_, cmd := m.Update(keyPress("q"))
	if cmd != nil || !m.study.confirmAbort {
		t.Fatal("q quit a running study without asking")
	}
	_, cmd = m.Update(keyPress("y"))
	if cmd != nil || f.ctx.Err() == nil {
		t.Fatal("y: want the study cancelled and the quit deferred until its stream ends")
	}
	_, cmd = m.Update(studyUpdatedMsg{stream: m.stream, updates: []study.Update{{Err: context.Canceled}}, closed: true})
	if cmd == nil {
		t.Fatal("the stream ended but the workbench did not quit")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Error("want tea.Quit")
	}
}

func TestStudyOrderTallyAndResult(t *testing.T) {
	m, _ := studyModel(t, 120, 40, StudyOrder)
	var ups []study.Update
	for i := 0; i < 4; i++ {
		for _, ph := range []string{lab.OrderFixed, lab.OrderRandom} {
			u := progress(ph, i, len(ups)+1, 20, analysis.VerdictNoChange)
			if ph == lab.OrderFixed {
				u.Progress.Outcome = analysis.VerdictRegression
			}
			ups = append(ups, u)
		}
	}
	m.Update(studyUpdatedMsg{stream: m.stream, updates: ups})
	scr := screenText(m)
	for _, want := range []string{"fixed     4 runs: regression 4", "random    4 runs: no change 4", "8/20 runs", "fixed #4: regression"} {
		if !strings.Contains(scr, want) {
			t.Errorf("screen lacks %q:\n%s", want, scr)
		}
	}
	if strings.Contains(scr, "A/A false positives") {
		t.Error("an order study shows the A/A tally")
	}
	m.Update(studyUpdatedMsg{stream: m.stream, updates: []study.Update{{Order: fakeOrder()}}, closed: true})
	scr = screenText(m)
	for _, want := range []string{"matters RED FLAG", "≠ startup_ms: fixed regression (Δ +4.90%), random no change", "control/startup_ms: median intervals do not overlap", "Order matters: fixed and random"} {
		if !strings.Contains(scr, want) {
			t.Errorf("result lacks %q:\n%s", want, scr)
		}
	}
}

func TestStudyErrorAndNoBackend(t *testing.T) {
	m, _ := studyModel(t, 80, 24, StudyValidate)
	m.Update(studyUpdatedMsg{stream: m.stream, updates: []study.Update{{Err: errors.New("validate: no experiment completed; first error: boom")}}, closed: true})
	if scr := screenText(m); !strings.Contains(scr, "validate · failed") || !strings.Contains(scr, "no experiment completed") {
		t.Errorf("error not shown:\n%s", scr)
	}
	m2 := sized(NewRun(Options{Now: fixedNow}, simInfo(), synthPlan(10)), 80, 24)
	selectMode(t, m2, StudyOrder)
	press(t, m2, "enter")
	if m2.screen != screenStudy || !strings.Contains(screenText(m2), "cannot run studies") {
		t.Errorf("no backend: want a clear error:\n%s", screenText(m2))
	}
}

func TestStepperStudyRows(t *testing.T) {
	m := sized(NewRun(Options{Now: fixedNow}, localInfo(), synthPlan(10)), 80, 24)
	p := &m.controls
	row := func(s string) controlRow {
		for _, r := range p.rows {
			if r.setting == s {
				return r
			}
		}
		t.Fatalf("no %s row", s)
		return controlRow{}
	}
	if p.aa != studyAAReal || p.effectPct != 0 {
		t.Errorf("local defaults K=%d effect %v, want %d and none", p.aa, p.effectPct, studyAAReal)
	}
	for _, c := range []struct {
		mode          string
		aa, eff, runs bool
	}{{modeRun, false, false, false}, {StudyValidate, true, true, false}, {StudyOrder, false, false, true}} {
		p.mode = c.mode
		if p.supported(row("aa")) != c.aa || p.supported(row("effect")) != c.eff || p.supported(row("runs")) != c.runs {
			t.Errorf("mode %s: aa/effect/runs supported %v/%v/%v, want %v/%v/%v", c.mode,
				p.supported(row("aa")), p.supported(row("effect")), p.supported(row("runs")), c.aa, c.eff, c.runs)
		}
	}
	if sp := p.studyPlan(m.exp); sp == nil || sp.Study != StudyOrder || sp.Runs != study.DefaultOrderRuns {
		t.Errorf("plan %+v", sp)
	}
	p.mode = modeRun
	if p.studyPlan(m.exp) != nil {
		t.Error("mode run made a study plan")
	}
}

func TestWaitForStudyBatchesAndCloses(t *testing.T) {
	ch := make(chan study.Update, 8)
	for _, u := range aaUpdates(3, 10) {
		ch <- u
	}
	msg := waitForStudy(4, ch)().(studyUpdatedMsg)
	if msg.stream != 4 || len(msg.updates) != 3 || msg.closed {
		t.Errorf("got %d updates, closed %v", len(msg.updates), msg.closed)
	}
	ch <- study.Update{Validation: fakeValidation()}
	close(ch)
	msg = waitForStudy(4, ch)().(studyUpdatedMsg)
	if len(msg.updates) != 1 || msg.updates[0].Validation == nil || !msg.closed {
		t.Errorf("last message %+v", msg)
	}
}

func TestStudyAbortWhileStarting(t *testing.T) {
	f := &fakeStudy{}
	m := sized(NewRun(Options{Backend: Backend{StartStudy: f.start}, Now: fixedNow}, simInfo(), synthPlan(10)), 80, 24)
	selectMode(t, m, StudyValidate)
	_, cmd := m.Update(keyPress("enter"))
	_, start := m.Update(cmd())
	press(t, m, "x", "y")
	if !m.study.aborted || !m.study.running() {
		t.Fatal("x y while starting: want aborted and still waiting for the stream")
	}
	_, wait := m.Update(start())
	if wait == nil || f.ctx.Err() == nil {
		t.Fatal("the study started after an abort was not cancelled at once")
	}
	m.Update(studyUpdatedMsg{stream: m.stream, updates: []study.Update{{Err: context.Canceled}}, closed: true})
	if scr := screenText(m); !strings.Contains(scr, "validate · aborted") || !strings.Contains(scr, "aborted before any run finished") {
		t.Errorf("want the abort explained:\n%s", scr)
	}
}
