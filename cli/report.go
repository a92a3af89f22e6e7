package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/bisect"
	"github.com/perflab/perflab/sessions/engine"
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
  --benchstat  Go benchmark format, control (the base) first, then every
               other build in order; compare with: benchstat -col arm FILE
  --dump       the whole session as one JSON document

Exit status: 0 no regression, 3 regression detected, 1 error.

Examples:
  perflab report ~/.local/share/perflab/sessions/20261122-101500-ab12cd.jsonl
  perflab report s.jsonl --json | jq '.metrics[] | {name, verdict}'
  perflab report s.jsonl --csv > trials.csv
  perflab report s.jsonl --benchstat > s.txt && benchstat -col arm s.txt
  perflab report s.jsonl --plot s.png         # or s.svg

Manual: docs/sessions.md

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
	// Only the table is printed: the unpaired estimates no table shows
	// for a paired metric are skipped (as run --headless does), which
	// leaves the table and the verdicts as they are.
	opt.SkipUnpairedEstimates = !*asJSON && *plotFile == ""
	events, regimeLines, err := regimeEvents(s.Events, *regime, opt)
	if err != nil {
		fmt.Fprintln(stderr, "perflab report:", err)
		return exitUsage
	}
	plan := &s.Header.Plan
	rep := engine.Analyse(plan, sessions.ArmInputs(events, len(plan.ArmKeys())), opt)
	rep.Warn(regimeLines.warnings...)
	if *plotFile != "" {
		if err := plotSession(*plotFile, s, rep.Reports()); err != nil {
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
		for _, l := range append(regimeLines.list, regimeLines.order...) {
			fmt.Fprintln(stdout, l)
		}
		fmt.Fprintln(stdout)
		if rep.HasComparison() {
			fmt.Fprint(stdout, rep.Table())
		} else {
			fmt.Fprintln(stdout, nothingToCompare(sum.Counts))
		}
	}
	return regressionFound(stderr, "perflab report", verdictCode(rep))
}

// regimeReport is what report and replay say about regimes: the list
// (with notes) and the order effect of the analysed regime
// (sessions.OrderEffectLines), and the warnings that go into the report
// (with how busy the host was during its trials, sessions.HostWarnings,
// and how its device was set up, sessions.SetupWarnings).
type regimeReport struct {
	list, order, warnings []string
}

// regimeEvents picks the events to analyse with sessions.ChooseRegime
// (which: --regime) and words its choice for the command line.
func regimeEvents(events []lab.Event, which string, opt analysis.Options) ([]lab.Event, regimeReport, error) {
	rc, err := sessions.ChooseRegime(events, which, opt)
	if err != nil {
		return nil, regimeReport{}, err
	}
	rr := regimeReport{list: rc.List(), warnings: sessions.SetupWarnings(events)}
	if rc.Analysed != "" {
		a := rc.Analysed
		if which == "" {
			a = strings.TrimSuffix(a, ")") + "; --regime N picks another, --regime all pools them)"
		}
		rr.warnings = append(rr.warnings, a)
	}
	rr.warnings = append(rr.warnings, rc.Differ...)
	lines, warns := sessions.OrderEffectLines(rc.Order, opt.Alpha)
	rr.order = lines
	rr.warnings = append(rr.warnings, warns...)
	rr.warnings = append(rr.warnings, sessions.HostWarnings(rc.Events)...)
	return rc.Events, rr, nil
}
