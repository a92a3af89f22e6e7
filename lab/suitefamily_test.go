package lab

import (
	"strings"
	"testing"

	"github.com/perflab/perflab/analysis"
)

// TestSuiteFamilies: by default each benchmark's time is its one tested
// metric of the time family, MB/s is shown and never tested, B/op and
// allocs/op are tested in a family of their own where they vary and shown
// where they are the same in every round; the time family decides a
// deterministic change at the rounds a family of its size needs, whatever
// the number of other metrics.
func TestSuiteFamilies(t *testing.T) {
	const k = 20 // benchmarks
	rounds := SuiteMinRounds(0.05, k)
	if rounds != 10 {
		t.Fatalf("SuiteMinRounds(0.05, %d) = %d, want 10 (2/2^10 < 0.05/20 < 2/2^9)", k, rounds)
	}
	var in []analysis.MetricInput
	add := func(name, unit, better string, a, b func(i int) float64) {
		m := analysis.MetricInput{Name: name, Unit: unit, Better: better, Samples: [][]float64{{}, {}}}
		for i := range rounds {
			m.Samples[0], m.Samples[1] = append(m.Samples[0], a(i)), append(m.Samples[1], b(i))
			m.Pairs = append(m.Pairs, analysis.Pair{A: a(i), B: b(i)})
		}
		in = append(in, m)
	}
	for j := range k {
		name := "pkg.B" + string(rune('a'+j))
		wobble := func(i int) float64 { return 100 + float64((i*7+j*3)%5) }
		slower := func(i int) float64 { return 100 + float64((i*3+j*5+1)%5) }
		if j == 0 {
			slower = func(i int) float64 { return 1.3 * wobble(i) }
		}
		add(name, "ns/op", "lower", wobble, slower)
		add(name+":MB/s", "MB/s", "higher", func(i int) float64 { return 1e3 / wobble(i) }, func(i int) float64 { return 1e3 / slower(i) })
		if j == 1 { // 0 B/op but for one round that allocated once
			add(name+":B/op", "B/op", "lower", func(int) float64 { return 0 }, func(i int) float64 { return float64(16 * (i / 3 % 2)) })
		} else {
			add(name+":B/op", "B/op", "lower", func(int) float64 { return 64 }, func(int) float64 { return 64 })
		}
		add(name+":allocs/op", "allocs/op", "lower", func(i int) float64 { return float64(1 + i%2) }, func(i int) float64 { return float64(1 + i%3) })
	}
	fam := SuiteFamilies(DefaultSuiteMetrics, in)
	o := analysis.DefaultOptions()
	o.Correction = analysis.CorrectionBH
	r, sizes := analysis.CompareFamilies(in, fam, o, nil)
	if len(sizes) != 2 || sizes[0] != (analysis.FamilySize{Name: FamilyTime, Metrics: k, Tested: k}) || sizes[1].Name != FamilyAlloc || sizes[1].Metrics != k {
		t.Errorf("families %+v", sizes)
	}
	for i, m := range r.Metrics {
		switch unit := in[i].Unit; {
		case unit == "ns/op" && i == 0:
			if m.Verdict != analysis.VerdictRegression {
				t.Errorf("%s: %s, want regression at %d rounds in a time family of %d", m.Name, m.Verdict, rounds, k)
			}
		case unit == "MB/s":
			if m.Verdict != "not tested (derived from ns/op)" || m.PAdjusted.Defined() || m.Decision.CILowPct.Defined() {
				t.Errorf("%s: %q p adj %v, want shown, not tested", m.Name, m.Verdict, m.PAdjusted)
			}
		case unit == "B/op" && strings.HasPrefix(m.Name, "pkg.Bb"):
			if m.Verdict != "not tested (0 in some rounds: no ratio B/A to test)" || m.PAdjusted.Defined() {
				t.Errorf("%s: %q, want not tested, with why", m.Name, m.Verdict)
			}
		case unit == "B/op":
			if m.Verdict != "not tested (64 in every round)" || len(m.Warnings) > 0 {
				t.Errorf("%s: %q %v, want not tested, no warnings", m.Name, m.Verdict, m.Warnings)
			}
		case unit == "allocs/op":
			if !strings.HasPrefix(m.Verdict, "no change") && m.Verdict != analysis.VerdictInconclusive {
				t.Errorf("%s: %q, want tested (varies)", m.Name, m.Verdict)
			}
		}
	}
	if !strings.Contains(r.PrimaryTest, "signed-rank") {
		t.Errorf("primary test %q, want the paired signed-rank test the verdicts used", r.PrimaryTest)
	}
	// The report a person reads: the summary first, changed rows before
	// the rest.
	text := analysis.SuiteTable(r, sizes, "")
	if first, _, _ := strings.Cut(text, "\n"); !strings.HasPrefix(first, "1 of 20 benchmarks changed: 1 slower (pkg.Ba +") {
		t.Errorf("first line %q\n%s", first, text)
	}
	if c, rest := strings.Index(text, "\nchanged:\n"), strings.Index(text, "\nthe rest:\n"); c < 0 || rest < c {
		t.Errorf("changed rows not before the rest:\n%s", text)
	}
	// All in one family, as before families.
	for _, f := range SuiteFamilies(FamiliesAll, in) {
		if f.Family != FamiliesAll {
			t.Fatalf("--metrics all: %+v, want every metric in one family", f)
		}
	}
	if err := CheckSuiteMetrics("time,alloc"); err != nil {
		t.Error(err)
	}
	if CheckSuiteMetrics("time,all") == nil || CheckSuiteMetrics("speed") == nil {
		t.Error("bad --metrics lists accepted")
	}
}

// TestSuiteNames: a suite's metrics are named with their package, and the
// GOMAXPROCS suffix every name shares is left out once (as benchstat
// does); mixed suffixes are kept.
func TestSuiteNames(t *testing.T) {
	out := []byte("goos: linux\npkg: example.com/m/lib/decimal\nBenchmarkAppend/Integers-2 \t 100\t 12 ns/op\t 5 B/op\n")
	ms, _, err := SuiteMetrics(out)
	if err != nil {
		t.Fatal(err)
	}
	ms = QualifySuiteMetrics(ms, out)
	if ms[0].Name != "decimal.Append/Integers-2" || ms[1].Name != "decimal.Append/Integers-2:B/op" {
		t.Fatalf("names %v", ms)
	}
	if got := BenchOfMetric(ms[1].Name); got != "decimal.Append" {
		t.Errorf("BenchOfMetric(%q) = %q", ms[1].Name, got)
	}
	in := []analysis.MetricInput{{Name: ms[0].Name}, {Name: ms[1].Name}, {Name: "decimal.Sort/n-1000-2"}}
	named, note := SuiteNames(in)
	if named[0].Name != "decimal.Append/Integers" || named[1].Name != "decimal.Append/Integers:B/op" || named[2].Name != "decimal.Sort/n-1000" ||
		!strings.Contains(note, "GOMAXPROCS 2") || in[0].Name != ms[0].Name {
		t.Errorf("%v %q", named, note)
	}
	if _, note := SuiteNames(append(in, analysis.MetricInput{Name: "decimal.X-4"})); note != "" {
		t.Errorf("mixed suffixes: %q, want names kept", note)
	}
}
