package tui

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/engine"
)

func init() {
	addScene("replay-3builds", func(t *testing.T, w, h int) *Model {
		m := sized(NewReplay(Options{Now: fixedNow}, simInfo(), threeBuildPlan(), threeBuildEvents(12), 10, nil), w, h)
		press(t, m, "G")
		return m
	})
}

// threeBuildPlan is the plan of threeBuildEvents: feed, feed +5%, feed −5%.
func threeBuildPlan() lab.Experiment {
	exp := lab.Experiment{Device: "sim:pixel", Trials: 12, Order: "random", Seed: 7}
	exp.SetBuilds([]lab.Build{{Name: "feed", App: "feed"}, {Name: "feed+5%", App: "feed", EffectPct: 5}, {Name: "feed-5%", App: "feed", EffectPct: -5}})
	return exp
}

// threeBuildEvents makes rounds of A, B and C in shuffled order, B 5%
// slower and C 5% faster than A, and an end.
func threeBuildEvents(rounds int) []lab.Event {
	rng := rand.New(rand.NewPCG(3, 4))
	evs := []lab.Event{{Type: lab.EventSettings, Settings: &lab.Settings{Order: "random"}}}
	factor := map[string]float64{"A": 1, "B": 1.05, "C": 0.95}
	t, idx := 0.0, 0
	for r := range rounds {
		arms := []string{"A", "B", "C"}
		rng.Shuffle(3, func(i, j int) { arms[i], arms[j] = arms[j], arms[i] })
		for _, arm := range arms {
			t += 0.5
			v := 700 * factor[arm] * (1 + rng.NormFloat64()*0.01)
			evs = append(evs, lab.Event{Type: lab.EventTrial, T: t, Trial: &lab.Trial{Index: idx, Round: r, Arm: arm, Build: arm,
				Order: "random", Status: lab.StatusOK, Duration: 0.5,
				Metrics: []lab.Metric{{Name: "startup_ms", Value: v, Unit: "ms", Better: "lower"}}}})
			idx++
		}
	}
	return append(evs, lab.Event{Type: lab.EventEnd, T: t, End: &lab.End{Reason: "completed"}})
}

// TestThreeBuildPanels checks the analysis the workbench shows for three
// builds: a row per build after the base, each paired with the base by
// round, B a regression and C an improvement, p corrected over both.
func TestThreeBuildPanels(t *testing.T) {
	plan := threeBuildPlan()
	s := newRunState(simInfo(), plan)
	for _, e := range threeBuildEvents(12) {
		s.apply(e)
	}
	pd := analyze(s.inputs(), engine.Options(&plan))
	if pd.builds != 3 || len(pd.metrics) != 2 || !pd.paired {
		t.Fatalf("builds %d, %d rows, paired %v", pd.builds, len(pd.metrics), pd.paired)
	}
	for i, want := range []struct{ name, verdict string }{{"startup_ms B", "regression"}, {"startup_ms C", "improvement"}} {
		m := pd.metrics[i]
		if m.name != want.name || m.verdict != want.verdict || m.nA != 12 || m.nB != 12 {
			t.Errorf("row %d: %s %s n %d/%d, want %s %s n 12/12", i, m.name, m.verdict, m.nA, m.nB, want.name, want.verdict)
		}
		if !(m.pAdj >= m.p) {
			t.Errorf("%s: p adj %v below p %v", m.name, m.pAdj, m.p)
		}
	}
	m := sized(NewReplay(Options{Now: fixedNow}, simInfo(), plan, threeBuildEvents(12), 10, nil), 80, 24)
	press(t, m, "G")
	if got := screenText(m); !strings.Contains(got, "each build vs A") || !strings.Contains(got, "A feed vs B feed+5%, C feed-5%") {
		t.Errorf("80×24 replay of three builds:\n%s", got)
	}
}

// TestThreeBuildStepperRunsOnly checks that the controls stepper of an
// experiment of three builds offers no study mode (validate and order
// take two builds) and names every build.
func TestThreeBuildStepperRunsOnly(t *testing.T) {
	m := sized(NewRun(Options{Now: fixedNow}, simInfo(), threeBuildPlan()), 80, 24)
	for _, r := range m.controls.rows {
		if r.setting == "mode" {
			t.Errorf("three builds: the stepper offers a study mode")
		}
	}
	if got := screenText(m); !strings.Contains(got, "A feed  vs  B feed+5%, C feed-5%") {
		t.Errorf("stepper header:\n%s", got)
	}
}
