package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/engine"
)

// suiteAgree is perflab suite --agree SESSION1 SESSION2: each session's
// verdicts as perflab report gives them, and on how many benchmark metrics
// the two agree (analysis.Agree: the same direction of change, or none
// found in both).
func suiteAgree(paths []string, asJSON bool, stdout, stderr io.Writer) int {
	if len(paths) != 2 {
		fmt.Fprintln(stderr, "perflab suite --agree: give two session files (perflab suite --agree SESSION1 SESSION2)")
		return exitUsage
	}
	var reps [2]analysis.Report
	for i, path := range paths {
		s, err := sessions.Load(path)
		if err != nil {
			fmt.Fprintln(stderr, "perflab suite --agree:", err)
			return exitError
		}
		plan := &s.Header.Plan
		opt := engine.Options(plan)
		events, _, err := regimeEvents(s.Events, "", opt, true)
		if err != nil {
			fmt.Fprintf(stderr, "perflab suite --agree: %s: %v\n", path, err)
			return exitError
		}
		reps[i] = engine.Analyse(plan, sessions.ArmInputs(events, len(plan.ArmKeys())), opt).Report
	}
	ag := analysis.Agree(reps[0], reps[1])
	// By package and name (a suite's names start with their package).
	slices.SortStableFunc(ag.Rows, func(x, y analysis.AgreementRow) int { return strings.Compare(x.Metric, y.Metric) })
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Sessions [2]string `json:"sessions"`
			analysis.Agreement
			Share analysis.Float `json:"share"`
		}{[2]string{paths[0], paths[1]}, ag, ag.Share()}); err != nil {
			fmt.Fprintln(stderr, "perflab suite --agree:", err)
			return exitError
		}
		return exitOK
	}
	fmt.Fprintf(stdout, "agreement of 1: %s\n             2: %s\n(the same direction of change in both, or none found in either)\n\n", paths[0], paths[1])
	rows := [][]string{{"metric", "run 1", "run 2", "agree"}}
	for _, r := range ag.Rows {
		mark := "yes"
		if !r.Agree {
			mark = "NO"
		}
		rows = append(rows, []string{r.Metric, r.A, r.B, mark})
	}
	var sb strings.Builder
	analysis.WriteAligned(&sb, rows, []bool{false, false, false, false})
	io.WriteString(stdout, sb.String())
	fmt.Fprintf(stdout, "\n%d of %d tested metrics agree", ag.Agree, ag.Total)
	if ag.Total > 0 {
		fmt.Fprintf(stdout, " (%.1f%%)", 100*float64(ag.Share()))
	}
	fmt.Fprintln(stdout)
	if ag.UntestedInBoth > 0 {
		fmt.Fprintf(stdout, "%d metrics untested in both (the same constant in both arms)\n", ag.UntestedInBoth)
	}
	for i, only := range [][]string{ag.OnlyA, ag.OnlyB} {
		if len(only) > 0 {
			fmt.Fprintf(stdout, "only in run %d: %s\n", i+1, strings.Join(only, ", "))
		}
	}
	return exitOK
}
