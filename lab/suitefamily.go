package lab

import (
	"fmt"
	"slices"
	"strings"

	"github.com/perflab/perflab/analysis"
)

// Families of a suite's tests (SuiteInfo.Metrics). Each is corrected on
// its own (analysis.CompareFamilies), so the time family of k benchmarks
// can report a change at SuiteMinRounds(alpha, k) rounds, whatever else
// the benchmarks print.
const (
	// FamilyTime is each benchmark's time per op (ns/op, sec/op): the
	// one tested metric of a benchmark by default.
	FamilyTime = "time"
	// FamilyAlloc is B/op and allocs/op (-test.benchmem), tested where
	// they are not the same in every round.
	FamilyAlloc = "alloc"
	// FamilyCustom is the units a benchmark reports itself
	// (b.ReportMetric), tested where they are not the same in every round.
	FamilyCustom = "custom"
	// FamiliesAll tests every metric in one family (perflab before
	// families; a session with no "metrics").
	FamiliesAll = "all"
	// DefaultSuiteMetrics is perflab suite's --metrics default.
	DefaultSuiteMetrics = "time,alloc,custom"
)

// CheckSuiteMetrics says what is wrong with a --metrics list.
func CheckSuiteMetrics(list string) error {
	for _, f := range strings.Split(list, ",") {
		switch strings.TrimSpace(f) {
		case FamilyTime, FamilyAlloc, FamilyCustom:
		case FamiliesAll:
			if list != FamiliesAll {
				return fmt.Errorf("--metrics %q: all tests every metric in one family, give it alone", list)
			}
		default:
			return fmt.Errorf("--metrics %q: want a list of time, alloc and custom, or all", list)
		}
	}
	return nil
}

// SuiteFamilies sorts a suite's metric inputs into the families of list
// (SuiteInfo.Metrics): ns/op and sec/op into time; B/op and allocs/op into
// alloc and a benchmark's own units into custom, unless the same value in
// every round of both revisions (then shown: "the same in every round") or
// 0 in some round (no ratio to test);
// rates (MB/s and any unit per second) are the time in other units, shown
// and never tested. A family not in list is shown. "" or "all": every
// metric one family, as before families.
func SuiteFamilies(list string, inputs []analysis.MetricInput) []analysis.FamilyInput {
	out := make([]analysis.FamilyInput, len(inputs))
	if list == "" || list == FamiliesAll {
		for i := range out {
			out[i].Family = FamiliesAll
		}
		return out
	}
	want := map[string]bool{}
	for _, f := range strings.Split(list, ",") {
		want[strings.TrimSpace(f)] = true
	}
	for i, in := range inputs {
		var f, why string
		switch {
		case in.Unit == "ns/op" || in.Unit == "sec/op" || in.Unit == "est-cycles/op":
			f = FamilyTime // est-cycles/op: --measure cachegrind's time
		case strings.HasSuffix(in.Unit, "/s"):
			why = "a rate: the time per op in other units"
			if in.Unit == "MB/s" {
				why = "derived from ns/op"
			}
		case in.Unit == "B/op" || in.Unit == "allocs/op":
			f = FamilyAlloc
		default:
			f = FamilyCustom
		}
		if f != "" && f != FamilyTime {
			if v, ok := sameEverywhere(in); ok {
				f, why = "", fmt.Sprintf("%s in every round", formatConst(v))
			} else if notPositive(in) {
				// The paired analysis tests log(B/A): a 0 in some round
				// (e.g. B/op 0 but for a round that allocated once)
				// leaves no ratio to test, so say so, not "inconclusive".
				f, why = "", "0 in some rounds: no ratio B/A to test"
			}
		}
		if f != "" && !want[f] {
			f, why = "", fmt.Sprintf("family %s not asked for (--metrics %s)", f, list)
		}
		out[i] = analysis.FamilyInput{Family: f, Why: why}
	}
	return out
}

// sameEverywhere reports whether every value of in (both arms) is one
// value, and which.
func sameEverywhere(in analysis.MetricInput) (float64, bool) {
	var v float64
	n := 0
	for _, s := range in.Samples {
		for _, x := range s {
			if n > 0 && x != v {
				return 0, false
			}
			v = x
			n++
		}
	}
	return v, n > 0
}

// notPositive reports whether some value of in is 0 or below.
func notPositive(in analysis.MetricInput) bool {
	for _, s := range in.Samples {
		for _, x := range s {
			if x <= 0 {
				return true
			}
		}
	}
	return false
}

func formatConst(v float64) string { return fmt.Sprintf("%g", v) }

// SuiteMinRounds is the fewest rounds of each benchmark with which a
// family of k tests corrected by Benjamini–Hochberg at alpha can report
// anything: its first step needs a p below alpha/k, and the exact
// signed-rank test's smallest p with n pairs is 2/2ⁿ
// (analysis.SignedRankMinPairs).
func SuiteMinRounds(alpha float64, k int) int {
	return analysis.SignedRankMinPairs(alpha / float64(max(k, 1)))
}

// SuiteNames drops go test's GOMAXPROCS suffix ("-8") from the suite's
// metric names when every name has the same one, as benchstat does, and
// says so once ("every benchmark ran at GOMAXPROCS 8: the -8 of go test's
// names is left out"); names with different suffixes (or none) are left.
// The inputs are copied, not changed.
func SuiteNames(inputs []analysis.MetricInput) ([]analysis.MetricInput, string) {
	suffix := ""
	for _, in := range inputs {
		_, s := splitProcs(in.Name)
		if s == "" || suffix != "" && s != suffix {
			return inputs, ""
		}
		suffix = s
	}
	if suffix == "" {
		return inputs, ""
	}
	out := slices.Clone(inputs)
	for i := range out {
		bench, _ := splitProcs(out[i].Name)
		out[i].Name = bench
	}
	return out, fmt.Sprintf("every benchmark ran at GOMAXPROCS %s: the -%s of go test's names is left out", suffix, suffix)
}

// splitProcs splits a suite metric name "pkg.Bench/sub-8:unit" into the
// name without its GOMAXPROCS suffix ("pkg.Bench/sub:unit") and the
// suffix ("8"; "" when none).
func splitProcs(name string) (string, string) {
	bench, unit := name, ""
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		bench, unit = name[:i], name[i:]
	}
	i := strings.LastIndexByte(bench, '-')
	if i < 0 || i == len(bench)-1 || strings.ContainsAny(bench[i+1:], "/.") {
		return name, ""
	}
	for _, c := range bench[i+1:] {
		if c < '0' || c > '9' {
			return name, ""
		}
	}
	return bench[:i] + unit, bench[i+1:]
}
