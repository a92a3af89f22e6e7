package lab

import (
	"context"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestParseBuildList checks the list form of builds: two builds are the
// control and the treatment, as the keyed form; three or more are A (the
// base), B, C, ...; and the mistakes name their field.
func TestParseBuildList(t *testing.T) {
	two, err := ParseExperiment([]byte(`{"builds": [{"name": "old", "command": ["true"]}, {"name": "new", "command": ["false"]}], "seed": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	keyed, err := ParseExperiment([]byte(`{"builds": {"control": {"name": "old", "command": ["true"]}, "treatment": {"name": "new", "command": ["false"]}}, "seed": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(two, keyed) || two.MultiArm() {
		t.Errorf("list of two %+v differs from the keyed form %+v", two, keyed)
	}
	three, err := ParseExperiment([]byte(`{"device": "sim:pixel", "trials": 3,
		"builds": [{"app": "feed"}, {"app": "feed", "effect_pct": 5}, {"name": "v3", "app": "feed"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := three.ArmKeys(); !reflect.DeepEqual(got, []string{"A", "B", "C"}) || !three.MultiArm() || three.Trials != 3 {
		t.Errorf("arms %q, trials %d", got, three.Trials)
	}
	if three.Builds["B"].EffectPct != 5 || three.ArmLabel("C") != "v3" || three.ArmLabel("B") != "feed+5%" {
		t.Errorf("builds %+v, labels %q %q", three.Builds, three.ArmLabel("B"), three.ArmLabel("C"))
	}
	// The keyed form of three builds (a session's plan) reads back the same.
	back, err := ParseExperiment([]byte(`{"device": "sim:pixel", "trials": 3, "seed": ` + itoa(three.Seed) + `,
		"builds": {"A": {"app": "feed"}, "B": {"app": "feed", "effect_pct": 5}, "C": {"name": "v3", "app": "feed"}}}`))
	if err != nil || !reflect.DeepEqual(back, three) {
		t.Errorf("keyed three builds: %v\n%+v\nwant %+v", err, back, three)
	}

	for _, c := range []struct{ src, want string }{
		{`{"builds": [{"command": ["true"]}]}`, "builds: 1 build(s) listed, want at least 2"},
		{`{"builds": [{"command": ["true"]}, {"comand": ["true"]}]}`, `builds[1].comand: unknown field (did you mean "command"?)`},
		{`{"builds": [{"app": "feed"}, {"app": "feed"}, {"app": "feed", "effect_pct": -200}]}`, "builds.C.effect_pct: -200 is too small"},
		{`{"builds": {"A": {"app": "feed"}, "B": {"app": "feed"}}}`, `builds.A: unknown build (want "control" and "treatment"`},
		{`{"builds": {"A": {"app": "feed"}, "B": {"app": "feed"}, "D": {"app": "feed"}}}`, `builds.D: unknown build (want "A" (the base) to "C", one per build`},
		{`{"builds": [{"app": "feed"}, {"app": "feed"}, {"app": "feed"}], "stop": "auto"}`, `stop: "auto" compares two builds, this experiment has 3`},
		{`{"builds": [` + strings.Repeat(`{"app": "feed"}, `, MaxArms) + `{"app": "feed"}]}`, "builds: 27 builds listed, want at most 26"},
	} {
		_, err := ParseExperiment([]byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.src, err, c.want)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestRunnerThreeBuilds checks rounds of one trial per build in each
// order: fixed runs each build's trials in turn, alternate ABC ABC,
// random shuffles every round and still holds one trial per build.
func TestRunnerThreeBuilds(t *testing.T) {
	for _, c := range []struct {
		order string
		want  string // arms by trial; "" checks rounds only
	}{
		{OrderFixed, "AABBCC"},
		{OrderAlternate, "ABCABC"},
		{OrderRandom, ""},
	} {
		exp := &Experiment{Device: "script", Trials: 2, Order: c.order, Seed: 7, Alpha: 0.05, Confidence: 0.95}
		exp.SetBuilds([]Build{{Name: "a"}, {Name: "b"}, {Name: "c"}})
		exp.Trials = 3
		if c.order != OrderRandom {
			exp.Trials = 2
		}
		dev := &scriptDevice{}
		evs := collect(NewRunner(dev, exp).Run(context.Background()))
		var seq strings.Builder
		rounds := map[int]string{}
		for _, e := range evs {
			if tr := e.Trial; tr != nil {
				seq.WriteString(tr.Arm)
				rounds[tr.Round] += tr.Arm
				if want := exp.Builds[tr.Arm].Name; tr.Build != want {
					t.Errorf("%s: trial %d of arm %s names build %q, want %q", c.order, tr.Index, tr.Arm, tr.Build, want)
				}
			}
		}
		if c.want != "" && seq.String() != c.want {
			t.Errorf("%s: arms %s, want %s", c.order, seq.String(), c.want)
		}
		if c.order == OrderRandom {
			shuffled := false
			for r, arms := range rounds {
				if len(arms) != 3 || !strings.Contains(arms, "A") || !strings.Contains(arms, "B") || !strings.Contains(arms, "C") {
					t.Errorf("random round %d: %s, want one trial of each build", r, arms)
				}
				if arms != "ABC" {
					shuffled = true
				}
			}
			if len(rounds) != 3 || !shuffled {
				t.Errorf("random: rounds %v, want 3 of them, not all in base order", rounds)
			}
		}
		if end := evs[len(evs)-1].End; end == nil || end.Reason != "completed" {
			t.Errorf("%s: end %+v", c.order, end)
		}
	}
}
