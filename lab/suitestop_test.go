package lab

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/perflab/perflab/analysis"
)

// stopLook is the suite stop rule's state after a round: what the runner
// reads of it, and the verdicts' count.
type stopLook struct {
	wanted, decided, capped string
	stop                    bool
	why, summary            string
}

func lookAt(a *autoStop) stopLook {
	keys := func(m map[string]bool) string { return strings.Join(slices.Sorted(maps.Keys(m)), " ") }
	return stopLook{wanted: keys(a.wantedBenches()), decided: keys(a.suite.decided), capped: keys(a.suite.capped),
		stop: a.decided(), why: a.why(""), summary: a.suite.summary}
}

// TestSuiteStopAsFromScratch: the suite stop rule's analysis.Comparer,
// which analyses again only the metrics of the round's benchmark, leaves
// the rule where analysis.Compare of every metric after every round does:
// the same benchmarks wanted, decided and capped, the same verdicts, the
// same stop, at every round of seeded suites.
func TestSuiteStopAsFromScratch(t *testing.T) {
	for _, c := range []stopSize{{6, 8, 5}} {
		t.Run(fmt.Sprintf("%dx%d-threshold%g", c.benches, c.rounds, c.threshold), func(t *testing.T) {
			s := newStopSuite(c.benches, c.rounds, c.threshold)
			fresh := newAutoStop(s.exp, 1)
			fresh.suite.compare = fromScratch(fresh.suite.opt)
			var want, got []stopLook
			s.run(fresh, func(_ int, a *autoStop) { want = append(want, lookAt(a)) })
			s.run(newAutoStop(s.exp, 1), func(_ int, a *autoStop) { got = append(got, lookAt(a)) })
			if len(got) != len(want) {
				t.Fatalf("%d rounds, from scratch %d", len(got), len(want))
			}
			changes := 0
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("round %d:\n got %+v\nwant %+v", i, got[i], want[i])
				}
				if i > 0 && want[i].decided != want[i-1].decided {
					changes++
				}
			}
			// The seeded suite exercises the rule: benchmarks decided
			// (and dropped) as the run goes.
			last := want[len(want)-1]
			if changes < 2 || last.decided == "" {
				t.Errorf("the decided benchmarks changed %d times, ending with %q: want a suite that decides some", changes, last.decided)
			}
			t.Logf("%d rounds, decided set changed %d times; last: %+v", len(want), changes, last)
		})
	}
}

// fromScratch is the suite stop rule's analysis without its Comparer:
// every metric analysed again after every round.
func fromScratch(opt analysis.Options) func([]analysis.MetricInput) analysis.Report {
	return func(in []analysis.MetricInput) analysis.Report { return analysis.Compare(in, opt) }
}
