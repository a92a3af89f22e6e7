package bisect

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
)

// hangWait bounds a bisect on the simulated phone: it only catches a hang.
// A whole bisect takes seconds on an idle host, but a race-built test on a
// loaded 2-core machine has taken minutes (and a deadline shared by three
// bisects ran out in the third, as "context canceled").
const hangWait = 10 * time.Minute

func TestSimOneStep(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), hangWait)
	defer cancel()
	cfg := Config{Candidates: SimRange("feed", 16, map[int]float64{9: 1}), Template: SimTemplate(3), Dir: t.TempDir(), Tool: "test"}
	var events int
	rec, err := Run(ctx, SimLab(), cfg, func(Event) { events++ })
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rec.Comparisons {
		t.Logf("%d→%d %s %s trials %d Δ %.2f [%.2f, %.2f]", c.A, c.B, c.Purpose, c.Verdict, c.Trials, c.DeltaPct, c.CILowPct, c.CIHighPct)
	}
	if rec.Outcome != OutcomeCulprit || rec.FirstBad == nil || rec.FirstBad.Index != 9 {
		t.Fatalf("outcome %s first bad %+v, want build 9", rec.Outcome, rec.FirstBad)
	}
	if rec.FirstBad.Verdict != analysis.VerdictRegression {
		t.Errorf("step verdict %s", rec.FirstBad.Verdict)
	}
	t.Logf("trials %d, events %d", rec.TrialsTotal, events)
}

func TestSimTwoStepsAndFlat(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		steps   map[int]float64
		outcome string
		first   int
		others  []int
	}{
		{"two steps", 32, map[int]float64{5: 2, 20: 3}, OutcomeCulprit, 5, []int{20}},
		{"flat", 8, nil, OutcomeNoDiff, -1, nil},
		{"step at the end", 8, map[int]float64{7: 3}, OutcomeCulprit, 7, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), hangWait)
			defer cancel()
			cfg := Config{Candidates: SimRange("feed", tt.n, tt.steps), Template: SimTemplate(11), Dir: t.TempDir()}
			rec, err := Run(ctx, SimLab(), cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Outcome != tt.outcome {
				t.Fatalf("outcome %q, want %q", rec.Outcome, tt.outcome)
			}
			first := -1
			if rec.FirstBad != nil {
				first = rec.FirstBad.Index
			}
			var others []int
			for _, s := range rec.OtherSteps {
				others = append(others, s.Index)
			}
			if first != tt.first || !slices.Equal(others, tt.others) {
				t.Errorf("first bad %d, other steps %v; want %d, %v", first, others, tt.first, tt.others)
			}
			total := 0
			for _, c := range rec.Comparisons {
				total += c.Trials
				if len(c.Sessions) == 0 {
					t.Errorf("comparison %d→%d has no session", c.A, c.B)
				}
			}
			if total != rec.TrialsTotal {
				t.Errorf("trials_total %d, comparisons add up to %d", rec.TrialsTotal, total)
			}
		})
	}
}

func TestRecordRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := Config{Candidates: SimRange("notes", 4, map[int]float64{2: 4}), Template: SimTemplate(5), Dir: dir}
	rec, err := Run(ctx, SimLab(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "b.json")
	if err := rec.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.FirstBad == nil || back.FirstBad.Index != 2 || len(back.Comparisons) != len(rec.Comparisons) {
		t.Fatalf("loaded %+v", back)
	}
	for _, c := range back.Comparisons {
		for _, s := range c.Sessions {
			if _, err := sessions.Load(s); err != nil {
				t.Errorf("session %s: %v", s, err)
			}
		}
	}
	if _, err := Load(filepath.Join(dir, "nope.json")); err == nil {
		t.Error("loading a missing file: no error")
	}
}

func TestConfigErrors(t *testing.T) {
	tmpl := SimTemplate(1)
	fixed := tmpl
	fixed.Order = "fixed"
	for _, cfg := range []Config{
		{Candidates: SimRange("feed", 1, nil), Template: tmpl},
		{Candidates: SimRange("feed", 4, nil), Template: fixed},
		{Candidates: SimRange("feed", 4, nil), Template: tmpl, MaxTrials: 1},
	} {
		if _, err := Run(context.Background(), SimLab(), cfg, nil); err == nil {
			t.Errorf("config %+v: no error", cfg)
		}
	}
}

func TestEventsAndCancel(t *testing.T) {
	cfg := Config{Candidates: SimRange("feed", 8, map[int]float64{3: 3}), Template: SimTemplate(2), Dir: t.TempDir()}
	kinds := map[string]int{}
	left := -1
	rec, err := Run(context.Background(), SimLab(), cfg, func(ev Event) {
		kinds[ev.Kind]++
		if ev.Kind == KindDone {
			left = ev.Left
		}
	})
	if err != nil || rec.FirstBad == nil || rec.FirstBad.Index != 3 {
		t.Fatalf("%v %+v", err, rec.FirstBad)
	}
	if kinds[KindStart] < len(rec.Comparisons) || kinds[KindDone] != len(rec.Comparisons) || kinds[KindStep] != 1 || kinds[KindSession] == 0 {
		t.Errorf("events %v for %d comparisons", kinds, len(rec.Comparisons))
	}
	if left != 0 {
		t.Errorf("builds in doubt at the end: %d, want 0", left)
	}
	// Cancelled during the second comparison: the record keeps the first.
	ctx, cancel := context.WithCancel(context.Background())
	cfg.Dir = t.TempDir()
	rec, err = Run(ctx, SimLab(), cfg, func(ev Event) {
		if ev.Kind == KindDone {
			cancel()
		}
	})
	if err == nil || rec.Outcome != OutcomeCancelled || len(rec.Comparisons) < 1 || rec.Comparisons[0].Verdict != analysis.VerdictRegression {
		t.Errorf("cancelled: err %v, outcome %q, comparisons %+v", err, rec.Outcome, rec.Comparisons)
	}
}

func TestResolveError(t *testing.T) {
	cands := SimRange("feed", 4, map[int]float64{2: 3})
	cands[3].Build = lab.Build{}
	cfg := Config{Candidates: cands, Template: SimTemplate(2), Dir: t.TempDir(),
		Resolve: func(ctx context.Context, c Candidate) (lab.Build, error) {
			return lab.Build{}, errors.New("compiler on fire")
		}}
	rec, err := Run(context.Background(), SimLab(), cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "compiler on fire") || rec.Outcome != OutcomeFailed {
		t.Errorf("err %v, outcome %q", err, rec.Outcome)
	}
}

// TestOutcomeWordsMatchNumbers checks that the outcome says what the ends'
// comparison showed (issue 25): "ends do not differ" only with their
// interval within ±threshold, "the bad end is better" for an improvement,
// "undecided" with what held it back when they stay inconclusive; and that
// each decided comparison reports the builds still in doubt after it (the
// count the next comparison starts from), ending at 0.
func TestOutcomeWordsMatchNumbers(t *testing.T) {
	tests := []struct {
		name      string
		steps     map[int]float64
		maxTrials int
		attempts  int
		outcome   string
	}{
		{"flat", nil, 0, 0, OutcomeNoDiff},
		{"faster", map[int]float64{5: -4}, 0, 0, OutcomeImproved},
		{"too few trials", map[int]float64{5: 1}, 4, 1, OutcomeUndecided},
		{"step", map[int]float64{5: 3}, 0, 0, OutcomeCulprit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Candidates: SimRange("feed", 8, tt.steps), Template: SimTemplate(17), Dir: t.TempDir(),
				MaxTrials: tt.maxTrials, Attempts: tt.attempts}
			var starts, dones []int
			rec, err := Run(context.Background(), SimLab(), cfg, func(ev Event) {
				switch {
				case ev.Kind == KindStart && ev.Attempt == 0:
					starts = append(starts, ev.Left)
				case ev.Kind == KindDone:
					dones = append(dones, ev.Left)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if rec.Outcome != tt.outcome {
				t.Fatalf("outcome %q, want %q (ends %+v)", rec.Outcome, tt.outcome, rec.Comparisons[0])
			}
			ends := rec.Comparisons[0]
			lo, hi := float64(ends.CILowPct), float64(ends.CIHighPct)
			switch rec.Outcome {
			case OutcomeNoDiff:
				if !(lo > -rec.Threshold && hi < rec.Threshold) {
					t.Errorf("ends do not differ, but their interval [%.2f%%, %.2f%%] is not within ±%g%%", lo, hi, rec.Threshold)
				}
			case OutcomeImproved:
				if !(hi < 0) {
					t.Errorf("the bad end is better, but its interval is [%.2f%%, %.2f%%]", lo, hi)
				}
			case OutcomeUndecided:
				if ends.Verdict != VerdictUnknown || !strings.Contains(rec.Held, "inconclusive at 4 trials per arm") {
					t.Errorf("undecided: ends %s, held %q", ends.Verdict, rec.Held)
				}
			}
			// Each comparison's count of builds in doubt is the one the
			// next starts from; the last is 0.
			for i := 0; i+1 < len(starts) && i < len(dones); i++ {
				if dones[i] != starts[i+1] {
					t.Errorf("comparison %d ends with %d builds in doubt, the next starts with %d", i, dones[i], starts[i+1])
				}
			}
			if len(dones) == 0 || dones[len(dones)-1] != 0 {
				t.Errorf("builds in doubt after each comparison %v: want the last 0", dones)
			}
		})
	}
}
