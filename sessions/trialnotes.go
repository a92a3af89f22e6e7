package sessions

import (
	"fmt"
	"sort"
	"strings"

	"github.com/perflab/perflab/lab"
)

// TrialNotes returns a warning for each thing the devices said of
// trials that still counted (a suite's benchmark that failed while the
// others ran: lab.BenchFailures), with how many counted trials said it:
// "benchmark example.com/m.Sort failed, exit status 1 (in 12 of 40
// counted trials): its metrics lack those trials". Report, replay, run
// and the workbench add them to the report's warnings. A device that left
// a pool early (its setup failed, or it was lost for good) gets one too,
// after the trials' notes, in the order it left: "ssh://w2 left the pool
// after 3 trials (error: device setup: ...): the other devices ran the
// rest".
func TrialNotes(events []lab.Event) []string {
	count := map[string]int{}
	counted := 0
	ran := map[string]int{}
	var left []string
	profRounds, allRounds := map[int]bool{}, map[int]bool{}
	for _, e := range events {
		if t := e.Trial; t != nil && t.Counted() {
			allRounds[t.Round] = true
			if t.ProfileRound {
				profRounds[t.Round] = true
			}
		}
		if d := e.Device; d != nil && d.State == lab.DeviceLeft {
			why := ""
			if d.Reason != "" {
				why = " (" + d.Reason + ")"
			}
			left = append(left, fmt.Sprintf("%s left the pool after %s%s: the other devices ran the rest",
				d.Device, Count(ran[d.Device], "trial"), why))
		}
		if e.Trial != nil {
			ran[e.Trial.Device]++
		}
		t := e.Trial
		if t == nil || !t.Counted() {
			continue
		}
		counted++
		if t.Status != lab.StatusOK || t.Reason == "" {
			continue
		}
		for _, r := range strings.Split(t.Reason, "; ") {
			count[r]++
		}
	}
	var out []string
	for r, n := range count {
		out = append(out, fmt.Sprintf("%s (in %d of %d counted trials): its metrics lack those trials", r, n, counted))
	}
	sort.Strings(out)
	if len(profRounds) > 0 {
		out = append(out, fmt.Sprintf("%s of %d profiled (the plan profiles one round in K): the verdicts use the %s, perflab profile the profiled ones",
			Count(len(profRounds), "round"), len(allRounds), Count(len(allRounds)-len(profRounds), "unprofiled round")))
	}
	return append(out, left...)
}

// FailureNotes says why trials failed or timed out (warm-ups and the
// trial a cancel interrupted aside), by reason, the three most frequent
// and then the rest in one line: "16 of 32 trials failed or timed out:
// benchmark output: stdout:1: benchmark BenchmarkGarbled, ...". The
// command line's reports (run, suite, report) add them to the warnings, so
// that a report read alone says why a suite's benchmark has no row; the
// workbench shows failures in its trials pane instead.
func FailureNotes(events []lab.Event) []string {
	failed := map[string]int{}
	trials := 0
	for _, e := range events {
		if t := e.Trial; t != nil && !t.Warmup && t.Status != lab.StatusInterrupted {
			trials++
			if t.Status == lab.StatusFailed || t.Status == lab.StatusTimeout {
				failed[t.Reason]++
			}
		}
	}
	reasons := make([]string, 0, len(failed))
	for r := range failed {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool {
		if failed[reasons[i]] != failed[reasons[j]] {
			return failed[reasons[i]] > failed[reasons[j]]
		}
		return reasons[i] < reasons[j]
	})
	var out []string
	rest, restReasons := 0, 0
	for i, r := range reasons {
		if i >= 3 {
			rest += failed[r]
			restReasons++
			continue
		}
		why := r
		if why == "" {
			why = "no reason given"
		}
		out = append(out, fmt.Sprintf("%d of %s failed or timed out: %s", failed[r], Count(trials, "trial"), why))
	}
	if rest > 0 {
		out = append(out, fmt.Sprintf("%d more failed or timed out, for %s", rest, Count(restReasons, "other reason")))
	}
	return out
}
