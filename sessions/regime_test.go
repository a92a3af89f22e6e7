package sessions

import (
	"testing"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
)

// TestRegimeDescribe: control toggles carry JSON values; the description
// shows strings without their quotes.
func TestRegimeDescribe(t *testing.T) {
	tests := []struct {
		r    Regime
		want string
	}{
		{Regime{Index: 1, ToRound: 9, Counted: [2]int{10, 10}}, "regime 1 (rounds 0–9); 10+10 trials"},
		{Regime{Index: 2, FromRound: 10, ToRound: -1, Counted: [2]int{3, 2},
			Toggles: []lab.Toggle{{What: "proxy", From: `"off"`, To: `"record"`}, {What: "tmpfs", From: "false", To: "true"}}},
			"regime 2 (rounds 10–): proxy off → record, tmpfs false → true; 3+2 trials"},
		{Regime{Index: 3, FromRound: 20, ToRound: -1, Toggles: []lab.Toggle{{What: "order", From: "random", To: "alternate"}}},
			"regime 3 (rounds 20–): order random → alternate; 0+0 trials"},
	}
	for _, tc := range tests {
		if got := tc.r.Describe(); got != tc.want {
			t.Errorf("Describe() = %q, want %q", got, tc.want)
		}
	}
}

// TestRegimesCountByRound: trials of the round in which a toggle came
// count in the regime before; with no regime of MinRegimeTrials per arm,
// the one with the most trials is analysed.
func TestRegimesCountByRound(t *testing.T) {
	trial := func(round int, arm string) lab.Event {
		return lab.Event{Type: lab.EventTrial, Trial: &lab.Trial{Round: round, Arm: arm, Status: lab.StatusOK,
			Metrics: []lab.Metric{{Name: "ms", Value: float64(100 + round)}}}}
	}
	var evs []lab.Event
	for r := 0; r < 4; r++ {
		evs = append(evs, trial(r, lab.ArmControl))
		if r == 3 { // the toggle comes mid-round 3, effective from round 4
			evs = append(evs, lab.Event{Type: lab.EventToggle, Toggle: &lab.Toggle{What: "order", From: "random", To: "alternate", Round: 4}})
		}
		evs = append(evs, trial(r, lab.ArmTreatment))
	}
	evs = append(evs, trial(4, lab.ArmControl), trial(4, lab.ArmTreatment))
	rs := Regimes(evs)
	if len(rs) != 2 || rs[0].Counted != [2]int{4, 4} || rs[1].Counted != [2]int{1, 1} {
		t.Fatalf("regimes %+v, want 4+4 then 1+1", rs)
	}
	if rs[0].Rounds != 4 || rs[1].Rounds != 1 {
		t.Errorf("rounds %d and %d, want 4 and 1 (round 3 in regime 1)", rs[0].Rounds, rs[1].Rounds)
	}
	rc, err := ChooseRegime(evs, "", analysis.DefaultOptions())
	if err != nil || rc.Pick != 0 || len(MetricInputs(rc.Events)[0].Samples[0]) != 4 {
		t.Errorf("pick %d (%q, %v), want regime 1 with 4 trials per arm", rc.Pick, rc.Analysed, err)
	}
}

// TestRegimeDifferNeedsATest: another regime's interval is compared with
// the analysed one's only when it has enough trials for a test; a regime
// of 2 rounds whose ratios sit far from the analysed regime's (the issue
// 25 warning "regime 2 (Δ +5.61% [+5.61%, +5.62%])") gets no warning, one
// of 12 rounds does.
func TestRegimeDifferNeedsATest(t *testing.T) {
	for _, tc := range []struct {
		first int
		warn  bool
	}{{2, false}, {12, true}} {
		var evs []lab.Event
		add := func(round int, a, b float64) {
			for _, x := range []struct {
				arm string
				v   float64
			}{{lab.ArmControl, a}, {lab.ArmTreatment, b}} {
				evs = append(evs, lab.Event{Type: lab.EventTrial, Trial: &lab.Trial{Round: round, Arm: x.arm, Status: lab.StatusOK,
					Order: lab.OrderAlternate, Metrics: []lab.Metric{{Name: "ms", Value: x.v}}}})
			}
		}
		for r := 0; r < tc.first; r++ {
			add(r, 100+float64(r%3), (100+float64(r%3))*1.056+0.01*float64(r))
		}
		evs = append(evs, lab.Event{Type: lab.EventToggle, Toggle: &lab.Toggle{What: "order", From: "alternate", To: "random", Round: tc.first}})
		for r := tc.first; r < tc.first+12; r++ {
			add(r, 100+float64(r%5), (100+float64(r%5))*(1+0.001*float64(r%3-1)))
		}
		rc, err := ChooseRegime(evs, "", analysis.DefaultOptions())
		if err != nil || rc.Pick != 1 {
			t.Fatalf("first regime %d rounds: pick %d, %v", tc.first, rc.Pick, err)
		}
		if got := len(rc.Differ) > 0; got != tc.warn {
			t.Errorf("first regime %d rounds: warnings %q, want a warning %v", tc.first, rc.Differ, tc.warn)
		}
	}
}
