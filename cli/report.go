package cli

import (
	"context"
	"flag"
	"fmt"
	"github.com/perflab/perflab/lab"
	"io"
	"os"
	"runtime/debug"
	"strconv"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab/bisect"
	"github.com/perflab/perflab/lab/engine"
	"github.com/perflab/perflab/sessions"
)

const reportUsage = `Usage: perflab report SESSION.jsonl [--json|--csv|--benchstat|--dump] [--plot FILE]

Re-analyses a saved session: the counted trials of each arm (status ok, not
warm-ups) are compared as perflab run does at its end. Unreadable lines (a
run killed mid-write, a corrupt line) are reported on stderr with their
line numbers and skipped; everything else loads.

Output formats:
  (default)    the comparison table
  --json       compare --json schema plus a "session" object (id, device,
               plan, trial counts by status, end, problems)
  --csv        one row per trial and metric (failed trials: one row, no metric)
  --benchstat  Go benchmark format, control first; compare with: benchstat -col arm FILE
  --dump       the whole session as one JSON document

Exit status: 0 no regression, 3 regression detected, 1 error.

Examples:
  perflab report ~/.local/share/perflab/sessions/20261122-101500-ab12cd.jsonl
  perflab report s.jsonl --json | jq '.metrics[] | {name, verdict}'
  perflab report s.jsonl --csv > trials.csv
  perflab report s.jsonl --benchstat > s.txt && benchstat -col arm s.txt
  perflab report s.jsonl --plot s.png         # or s.svg

Flags:
`

// cmdReport re-analyses a saved session.
func cmdReport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "JSON report (compare --json schema plus \"session\")")
	asCSV := fs.Bool("csv", false, "CSV, one row per trial and metric")
	asBench := fs.Bool("benchstat", false, "Go benchmark format for benchstat -col arm")
	dump := fs.Bool("dump", false, "the whole session as one JSON document")
	alpha := fs.Float64("alpha", 0, "significance level (default: the plan's)")
	confidence := fs.Float64("confidence", 0, "confidence level (default: the plan's)")
	correction := fs.String("correction", "", "holm, bonferroni or none (default holm)")
	test := fs.String("test", "", "primary test: mann-whitney or welch (default mann-whitney)")
	threshold := fs.String("threshold", "", "practical threshold, e.g. 2% (default: the plan's)")
	regime := fs.String("regime", "", "with toggles of controls or order: N analyses regime N, all pools them (default: the latest with enough trials)")
	plotFile := fs.String("plot", "", "also draw the session to `FILE`.svg or .png (trials by index, distributions, Δ% with CI, MFLOPS)")
	pos, code, ok := parseCommandFlags(fs, args, reportUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "perflab report: want exactly one session file (perflab report --help)")
		return exitUsage
	}
	if bisect.IsRecord(pos[0]) { // a bisect file: print it as perflab bisect --show does
		return showBisect(pos[0], *asJSON, stdout, stderr)
	}
	n := 0
	for _, b := range []bool{*asJSON, *asCSV, *asBench, *dump} {
		if b {
			n++
		}
	}
	if n > 1 {
		fmt.Fprintln(stderr, "perflab report: choose one of --json, --csv, --benchstat, --dump")
		return exitUsage
	}
	// A report allocates about twice the session file's size, nearly all
	// of it live until the end: a collection would free little and cost a
	// pass over all of it. The collector runs only should the heap reach
	// four times the file's size plus 256 MiB (or a lower GOMEMLIMIT).
	limit := int64(256 << 20)
	if st, err := os.Stat(pos[0]); err == nil {
		limit += 4 * st.Size()
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(min(limit, debug.SetMemoryLimit(-1))))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	s, err := sessions.Load(pos[0])
	if err != nil {
		fmt.Fprintln(stderr, "perflab report:", err)
		return exitError
	}
	for _, p := range s.Problems {
		fmt.Fprintf(stderr, "%s:%d: %s\n", pos[0], p.Line, p.Err)
	}
	switch {
	case *asCSV:
		err = sessions.WriteCSV(stdout, s)
	case *asBench:
		err = sessions.WriteBenchstat(stdout, s)
	case *dump:
		err = sessions.WriteJSON(stdout, s)
	}
	if n > 0 && !*asJSON {
		if err != nil {
			fmt.Fprintln(stderr, "perflab report:", err)
			return exitError
		}
		return exitOK
	}
	opt := engine.Options(&s.Header.Plan)
	if *alpha != 0 {
		opt.Alpha = *alpha
	}
	if *confidence != 0 {
		opt.Confidence = *confidence
	}
	if *correction != "" {
		opt.Correction = *correction
	}
	if *test != "" {
		opt.Test = *test
	}
	if *threshold != "" {
		if err := (percentFlag{&opt.ThresholdPct}).Set(*threshold); err != nil {
			fmt.Fprintln(stderr, "perflab report: --threshold:", err)
			return exitUsage
		}
	}
	if err := opt.Validate(); err != nil {
		fmt.Fprintln(stderr, "perflab report:", err)
		return exitUsage
	}
	events, regimeLines, err := regimeEvents(s.Events, *regime, opt)
	if err != nil {
		fmt.Fprintln(stderr, "perflab report:", err)
		return exitUsage
	}
	rep := analysis.Compare(sessions.MetricInputs(events), opt)
	rep.Warnings = append(rep.Warnings, regimeLines.warnings...)
	if *plotFile != "" {
		if err := plotSession(*plotFile, s, rep); err != nil {
			fmt.Fprintln(stderr, "perflab report:", err)
			return exitError
		}
		fmt.Fprintln(stderr, "perflab report: plot written to", *plotFile)
	}
	if *asJSON {
		if err := writeSessionReport(stdout, s, rep); err != nil {
			fmt.Fprintln(stderr, "perflab report:", err)
			return exitError
		}
	} else {
		sum := s.Summary()
		fmt.Fprintf(stdout, "session %s  device %s  %s\n", sum.ID, sum.Device.ID, formatCounts(sum.Counts))
		switch {
		case sum.End == nil:
			fmt.Fprintln(stdout, "run did not finish (no end event): showing the trials recorded")
		case sum.End.Reason != "completed":
			fmt.Fprintf(stdout, "run ended: %s %s\n", sum.End.Reason, sum.End.Error)
		}
		if sum.End != nil && sum.End.Stop != "" {
			fmt.Fprintf(stdout, "stopped: %s\n", sum.End.Stop)
		}
		for _, l := range regimeLines.list {
			fmt.Fprintln(stdout, l)
		}
		fmt.Fprintln(stdout)
		fmt.Fprint(stdout, analysis.Table(rep))
	}
	return verdictCode(rep)
}

// minRegimeTrials is the fewest counted trials per arm for a regime to be
// the primary one by default.
const minRegimeTrials = 5

// regimeReport is what report says about regimes: the list (with notes)
// and the warnings that go into the report.
type regimeReport struct {
	list, warnings []string
}

// regimeEvents picks the events to analyse when toggles split the session
// into regimes: regime N (which "N"), all of them pooled ("all"), or by
// default the latest regime with at least minRegimeTrials per arm. It
// warns when a regime's Δ interval does not overlap the chosen one's on a
// metric, which means the setting changed the answer.
func regimeEvents(events []lab.Event, which string, opt analysis.Options) ([]lab.Event, regimeReport, error) {
	var rr regimeReport
	rs := sessions.Regimes(events)
	if len(rs) < 2 {
		if which != "" && which != "all" && which != "1" {
			return nil, rr, fmt.Errorf("--regime %s: the session has one regime (nothing was toggled)", which)
		}
		return events, rr, nil
	}
	rr.list = append(rr.list, fmt.Sprintf("%d regimes (each toggle of controls or order starts one):", len(rs)))
	for _, r := range rs {
		rr.list = append(rr.list, "  "+r.Describe())
		for _, n := range r.Notes {
			rr.list = append(rr.list, "    note: "+n)
		}
	}
	if which == "all" {
		rr.warnings = append(rr.warnings, fmt.Sprintf("all %d regimes pooled (--regime all): settings changed during the run", len(rs)))
		return events, rr, nil
	}
	pick := -1
	if which != "" {
		n, err := strconv.Atoi(which)
		if err != nil || n < 1 || n > len(rs) {
			return nil, rr, fmt.Errorf("--regime %q: want all or a number from 1 to %d", which, len(rs))
		}
		pick = n - 1
	} else {
		for k := len(rs) - 1; k >= 0 && pick < 0; k-- {
			if rs[k].Counted[0] >= minRegimeTrials && rs[k].Counted[1] >= minRegimeTrials {
				pick = k
			}
		}
		if pick < 0 {
			pick = len(rs) - 1
		}
	}
	how := "chosen with --regime"
	if which == "" {
		how = fmt.Sprintf("the latest with at least %d trials per arm; --regime N picks another, --regime all pools them", minRegimeTrials)
	}
	rr.warnings = append(rr.warnings, fmt.Sprintf("analysed: regime %d of %d (%s)", pick+1, len(rs), how))
	chosen := analysis.Compare(sessions.MetricInputs(sessions.RegimeEvents(events, rs[pick])), opt)
	for k, r := range rs {
		if k == pick || r.Counted[0] < 2 || r.Counted[1] < 2 {
			continue
		}
		other := analysis.Compare(sessions.MetricInputs(sessions.RegimeEvents(events, r)), opt)
		for _, m := range other.Metrics {
			for _, c := range chosen.Metrics {
				if c.Name != m.Name {
					continue
				}
				a, b := m.Decision, c.Decision
				if a.CILowPct.Defined() && b.CILowPct.Defined() && (a.CILowPct > b.CIHighPct || a.CIHighPct < b.CILowPct) {
					rr.warnings = append(rr.warnings, fmt.Sprintf("%s differs between regime %d (Δ %+.2f%% [%+.2f%%, %+.2f%%]) and regime %d (Δ %+.2f%% [%+.2f%%, %+.2f%%]): the toggle changed the answer",
						m.Name, k+1, float64(a.DeltaPct), float64(a.CILowPct), float64(a.CIHighPct),
						pick+1, float64(b.DeltaPct), float64(b.CILowPct), float64(b.CIHighPct)))
				}
			}
		}
	}
	return sessions.RegimeEvents(events, rs[pick]), rr, nil
}
