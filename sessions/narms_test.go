package sessions

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
)

// threeBuildHeader is the header of a session of three builds, A the base.
func threeBuildHeader() Header {
	exp := &lab.Experiment{Device: "sim:pixel", Trials: 4, Order: lab.OrderRandom, Seed: 3, Alpha: 0.05, Confidence: 0.95}
	exp.SetBuilds([]lab.Build{{Name: "v1", App: "feed"}, {Name: "v2", App: "feed", EffectPct: 5}, {Name: "v3", App: "feed", EffectPct: -5}})
	return NewHeader("perflab test", lab.DeviceInfo{ID: "sim:pixel", Backend: "sim"}, exp)
}

// threeBuildEvents are rounds of A, B and C in shuffled orders, B 5×
// slower, C half as fast again as A; round 2 lost its C trial.
func threeBuildEvents() []lab.Event {
	orders := [][]string{{"C", "A", "B"}, {"B", "C", "A"}, {"A", "B", "C"}, {"C", "B", "A"}}
	base := map[string]float64{"A": 10, "B": 50, "C": 15}
	var evs []lab.Event
	i := 0
	for r, order := range orders {
		for _, arm := range order {
			st := lab.StatusOK
			if r == 2 && arm == "C" {
				st = lab.StatusFailed
			}
			e := trialEvent(i, arm, false, st, base[arm]+float64(r)*0.1)
			e.Trial.Round, e.Trial.Order = r, lab.OrderRandom
			evs = append(evs, e)
			i++
		}
	}
	return append(evs, lab.Event{Type: lab.EventEnd, T: 2, End: &lab.End{Reason: "completed"}})
}

// TestThreeBuildRoundTrip writes a session of three builds and reads it
// back: the plan keeps its builds in base order, every trial its arm, and
// the counts list each arm.
func TestThreeBuildRoundTrip(t *testing.T) {
	h, evs := threeBuildHeader(), threeBuildEvents()
	s, err := Load(writeSessionWith(t, h, evs))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Problems) != 0 || len(s.Events) != len(evs) {
		t.Fatalf("problems %v, %d events of %d", s.Problems, len(s.Events), len(evs))
	}
	if got := s.Header.Plan.ArmKeys(); !reflect.DeepEqual(got, []string{"A", "B", "C"}) {
		t.Errorf("arms %q", got)
	}
	if s.Header.Plan.Builds["C"].Name != "v3" {
		t.Errorf("build C %+v", s.Header.Plan.Builds["C"])
	}
	for k := range evs {
		if !reflect.DeepEqual(s.Events[k], evs[k]) {
			t.Errorf("event %d: read %+v, wrote %+v", k, s.Events[k], evs[k])
		}
	}
	c := s.Summary().Counts
	if want := map[string]int{"A": 4, "B": 4, "C": 3}; !reflect.DeepEqual(c.Counted, want) {
		t.Errorf("counted %v, want %v", c.Counted, want)
	}
}

// TestOldSessionArms checks that a two-build session (no letters in its
// plan) still reads, and that a trial of an arm its plan lacks is skipped
// with a problem naming the arms it has.
func TestOldSessionArms(t *testing.T) {
	evs := []lab.Event{trialEvent(0, lab.ArmControl, false, lab.StatusOK, 10), trialEvent(1, "C", false, lab.StatusOK, 10)}
	s, err := Load(writeSession(t, evs))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Events) != 1 || len(s.Problems) != 1 || !strings.Contains(s.Problems[0].Err, `unknown arm "C" (want "control" or "treatment")`) {
		t.Errorf("events %d, problems %v", len(s.Events), s.Problems)
	}
}

// TestArmInputsPairsEachWithBase checks the fold of three arms: a sample
// per arm in base order, B paired with A in all 4 rounds, C in the 3
// rounds where both ran (round 2 lost C: dropped for C only).
func TestArmInputsPairsEachWithBase(t *testing.T) {
	ins := ArmInputs(threeBuildEvents(), 3)
	if len(ins) != 2 || ins[0].Name != "wall_ms" {
		t.Fatalf("inputs %+v", ins)
	}
	in := ins[0]
	if len(in.Samples) != 3 || len(in.Samples[0]) != 4 || len(in.Samples[1]) != 4 || len(in.Samples[2]) != 3 {
		t.Fatalf("samples %v", in.Samples)
	}
	if in.Samples[1][0] != 50 || in.Samples[2][0] != 15 {
		t.Errorf("samples not by arm: %v", in.Samples)
	}
	if len(in.Pairs) != 4 || in.DroppedRounds != 0 {
		t.Errorf("A–B pairs %d dropped %d, want 4 and 0", len(in.Pairs), in.DroppedRounds)
	}
	if len(in.MorePairs) != 1 || len(in.MorePairs[0]) != 3 || in.MoreDropped[0] != 1 {
		t.Fatalf("A–C pairs %v dropped %v, want 3 pairs and 1 dropped", in.MorePairs, in.MoreDropped)
	}
	for _, p := range in.MorePairs[0] {
		if p.B-p.A != 5 {
			t.Errorf("A–C pair %+v is not of one round", p)
		}
	}
	// A two-arm fold ignores nothing either: it grows to the arms it meets.
	if got := MetricInputs(threeBuildEvents()); len(got[0].Samples) != 3 {
		t.Errorf("MetricInputs of three arms: %d samples", len(got[0].Samples))
	}
}

// TestBenchstatThreeBuilds checks the export of three builds: arms in
// base order whatever order the trials ran in, and the real benchstat
// comparing B and C against A.
func TestBenchstatThreeBuilds(t *testing.T) {
	s, err := Load(writeSessionWith(t, threeBuildHeader(), threeBuildEvents()))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteBenchstat(&buf, s); err != nil {
		t.Fatal(err)
	}
	var arms []string
	for _, l := range strings.Split(buf.String(), "\n") {
		if a, ok := strings.CutPrefix(l, "arm: "); ok {
			arms = append(arms, a)
		}
	}
	if !reflect.DeepEqual(arms, []string{"A", "B", "C"}) {
		t.Fatalf("arms in the export: %q\n%s", arms, buf.String())
	}
	tool := benchstatTool(t)
	path := filepath.Join(t.TempDir(), "s.txt")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "-col", "arm", path).CombinedOutput()
	if err != nil {
		t.Fatalf("benchstat: %v\n%s", err, out)
	}
	text := string(out)
	// wall_ms medians: A 10.15, B 50.15 (+394.09%); C has 3 values
	// (it lost round 2), too few for benchstat to call.
	head := strings.SplitN(text, "\n", 3)
	if len(head) < 2 || !strings.Contains(text, "+394.09%") || !strings.Contains(text, "n=4+3") ||
		!(strings.Index(head[1], "A") < strings.Index(head[1], "B") && strings.Index(head[1], "B") < strings.Index(head[1], "C")) {
		t.Errorf("benchstat: want columns A, B, C, B +394.09%% and C of 3 values against A:\n%s", text)
	}
}
