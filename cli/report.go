package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"github.com/perflab/perflab/sessions/page"
	"github.com/perflab/perflab/sessions/plot"
	"github.com/perflab/perflab/sessions/profdiff"
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

const reportUsage = `Usage: perflab report SESSION.jsonl [--json|--csv|--benchstat|--dump|--markdown] [--plot FILE] [--html FILE]

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
  --markdown   a GitHub-flavoured summary (the answer, the changed metrics
               first with Δ, interval and verdict, warnings folded): for a
               pull-request comment or $GITHUB_STEP_SUMMARY
  --html FILE  also write the report as one self-contained web page (the
               table, the plot, the where table when the session has
               profiles): to attach to a bug or keep as a CI artifact

Exit status: 0 no regression, 3 regression detected, 1 error.

Examples:
  perflab report ~/.local/share/perflab/sessions/20261122-101500-ab12cd.jsonl
  perflab report s.jsonl --json | jq '.metrics[] | {name, verdict}'
  perflab report s.jsonl --csv > trials.csv
  perflab report s.jsonl --benchstat > s.txt && benchstat -col arm s.txt
  perflab report s.jsonl --plot s.png         # or s.svg
  perflab report s.jsonl --html s.html
  perflab report s.jsonl --markdown >> "$GITHUB_STEP_SUMMARY"

Manual: docs/sessions.md

Flags:
`

// cmdReport re-analyses a saved session.
func cmdReport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	f := reportFlags{
		asJSON:     fs.Bool("json", false, "JSON report (compare --json schema plus \"session\")"),
		asCSV:      fs.Bool("csv", false, "CSV, one row per trial and metric"),
		asBench:    fs.Bool("benchstat", false, "Go benchmark format for benchstat -col arm"),
		dump:       fs.Bool("dump", false, "the whole session as one JSON document"),
		alpha:      fs.Float64("alpha", 0, "significance level (default: the plan's)"),
		confidence: fs.Float64("confidence", 0, "confidence level (default: the plan's)"),
		correction: fs.String("correction", "", "holm, bonferroni or none (default holm)"),
		test:       fs.String("test", "", "primary test: mann-whitney or welch (default mann-whitney)"),
		threshold:  fs.String("threshold", "", "practical threshold, e.g. 2% (default: the plan's)"),
		regime:     fs.String("regime", "", "with toggles of controls or order: N analyses regime N, all pools them (default: the latest with enough trials)"),
		plotFile:   fs.String("plot", "", "also draw the session to `FILE`.svg or .png (trials by index, distributions, Δ% with CI, MFLOPS)"),
		markdown:   fs.Bool("markdown", false, "a GitHub-flavoured Markdown summary instead of the table"),
		htmlFile:   fs.String("html", "", "also write the report as one self-contained web page to `FILE`"),
		wide:       fs.Bool("wide", false, "a suite's table with every column however wide (it fits the terminal without it)"),
	}
	pos, code, ok := parseCommandFlags(fs, args, reportUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "perflab report: want exactly one session file (perflab report --help)")
		return exitUsage
	}
	if bisect.IsRecord(pos[0]) { // a bisect file: print it as perflab bisect --show does
		return showBisect(pos[0], *f.asJSON, stdout, stderr)
	}
	n := f.formats()
	if n > 1 {
		fmt.Fprintln(stderr, "perflab report: choose one of --json, --csv, --benchstat, --dump, --markdown")
		return exitUsage
	}
	defer holdGC(pos[0])()
	s, err := sessions.Load(pos[0])
	if err != nil {
		fmt.Fprintln(stderr, "perflab report:", err)
		return exitError
	}
	for _, p := range s.Problems {
		fmt.Fprintf(stderr, "%s:%d: %s\n", pos[0], p.Line, p.Err)
	}
	if n > 0 && !*f.asJSON && !*f.markdown {
		if err := f.export(stdout, s); err != nil {
			fmt.Fprintln(stderr, "perflab report:", err)
			return exitError
		}
		return exitOK
	}
	opt, err := f.options(&s.Header.Plan)
	if err != nil {
		fmt.Fprintln(stderr, "perflab report:", err)
		return exitUsage
	}
	events, regimeLines, err := regimeEvents(s.Events, *f.regime, opt, s.Header.Plan.Suite != nil)
	if err != nil {
		fmt.Fprintln(stderr, "perflab report:", err)
		return exitUsage
	}
	plan := &s.Header.Plan
	rep := engine.Analyse(plan, sessions.ArmInputs(events, len(plan.ArmKeys())), opt)
	rep.Warn(regimeLines.warnings...)
	if *f.plotFile != "" {
		if err := plotSession(*f.plotFile, s, rep.Reports()); err != nil {
			fmt.Fprintln(stderr, "perflab report:", err)
			return exitError
		}
		fmt.Fprintln(stderr, "perflab report: plot written to", *f.plotFile)
	}
	if *f.htmlFile != "" || *f.markdown {
		in := page.Input{Session: s, Reports: rep.Reports(), Lines: append(regimeLines.list, regimeLines.order...)}
		if *f.htmlFile != "" {
			err = writePage(*f.htmlFile, pos[0], in)
			if err == nil {
				fmt.Fprintln(stderr, "perflab report: page written to", *f.htmlFile)
			}
		} else {
			err = page.Markdown(stdout, in)
		}
		if err != nil {
			fmt.Fprintln(stderr, "perflab report:", err)
			return exitError
		}
	}
	if *f.markdown {
		return regressionFound(stderr, "perflab report", verdictCode(rep))
	}
	if *f.asJSON {
		if err := writeSessionReport(stdout, s, rep); err != nil {
			fmt.Fprintln(stderr, "perflab report:", err)
			return exitError
		}
	} else {
		writeSessionTable(stdout, s, rep, regimeLines, fitWidth(stdout, *f.wide))
	}
	return regressionFound(stderr, "perflab report", verdictCode(rep))
}

// writePage writes the session's page to path: the report, its plot
// and, when the session has profiles, the where table (perflab profile's).
func writePage(path, sessionPath string, in page.Input) error {
	fillPage(&in, sessionPath)
	var b bytes.Buffer
	if err := page.HTML(&b, in); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// fillPage adds the session's figure and, when it has profiles, the
// where table to a page.
func fillPage(in *page.Input, sessionPath string) {
	if fig, err := plot.SessionVersus(in.Session, in.Reports); err == nil {
		var svg bytes.Buffer
		if fig.Write(&svg, "svg") == nil {
			in.Plot = svg.Bytes()
		}
	}
	if r, err := profdiff.Analyze(sessionPath, profdiff.Options{}); err == nil {
		var where bytes.Buffer
		printProfile(&where, r, 20, 0)
		in.Where = where.String()
	}
}

// reportFlags are report's flags.
type reportFlags struct {
	asJSON, asCSV, asBench, dump, markdown, wide  *bool
	htmlFile                                      *string
	alpha, confidence                             *float64
	correction, test, threshold, regime, plotFile *string
}

// formats counts the output formats asked for.
func (f reportFlags) formats() int {
	n := 0
	for _, b := range []bool{*f.asJSON, *f.asCSV, *f.asBench, *f.dump, *f.markdown} {
		if b {
			n++
		}
	}
	return n
}

// export writes the session as --csv, --benchstat or --dump asks.
func (f reportFlags) export(w io.Writer, s *sessions.Session) error {
	switch {
	case *f.asCSV:
		return sessions.WriteCSV(w, s)
	case *f.asBench:
		return sessions.WriteBenchstat(w, s)
	case *f.dump:
		return sessions.WriteJSON(w, s)
	}
	return nil
}

// options are the plan's analysis options with the flags' changes. Only
// the table is printed unless --json or --plot: the unpaired estimates no
// table shows for a paired metric are then skipped (as run --headless
// does), which leaves the table and the verdicts as they are.
func (f reportFlags) options(plan *lab.Experiment) (analysis.Options, error) {
	opt := engine.Options(plan)
	if *f.alpha != 0 {
		opt.Alpha = *f.alpha
	}
	if *f.confidence != 0 {
		opt.Confidence = *f.confidence
	}
	if *f.correction != "" {
		opt.Correction = *f.correction
	}
	if *f.test != "" {
		opt.Test = *f.test
	}
	if *f.threshold != "" {
		if err := (percentFlag{&opt.ThresholdPct}).Set(*f.threshold); err != nil {
			return opt, fmt.Errorf("--threshold: %w", err)
		}
	}
	if err := opt.Validate(); err != nil {
		return opt, err
	}
	opt.SkipUnpairedEstimates = !*f.asJSON && *f.plotFile == ""
	return opt, nil
}

// holdGC holds the garbage collector back while a session is reported and
// returns what restores it. A report allocates about twice the session
// file's size, nearly all of it live until the end: a collection would
// free little and cost a pass over all of it. The collector runs only
// should the heap reach four times the file's size plus 256 MiB (or a
// lower GOMEMLIMIT).
func holdGC(path string) (restore func()) {
	limit := int64(256 << 20)
	if st, err := os.Stat(path); err == nil {
		limit += 4 * st.Size()
	}
	oldLimit := debug.SetMemoryLimit(min(limit, debug.SetMemoryLimit(-1)))
	oldPercent := debug.SetGCPercent(-1)
	return func() {
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	}
}

// writeSessionTable writes report's text: the session's line, how the run
// ended, the regimes and the order effect, then the table; a suite's is
// fitted to width (0: whole).
func writeSessionTable(w io.Writer, s *sessions.Session, rep engine.Analysis, regimeLines regimeReport, width int) {
	sum := s.Summary()
	var suiteBody string
	var sb strings.Builder
	if rep.Families != nil && rep.HasComparison() {
		// A suite: what changed first, then the session's lines.
		var summary string
		summary, suiteBody = analysis.SuiteTableFit(rep.Report, rep.Families, rep.Names, width)
		fmt.Fprintln(&sb, summary)
	} else {
		width = 0 // a run's table is not fitted: its lines stay whole
	}
	fmt.Fprintf(&sb, "session %s  device %s  %s\n", sum.ID, sum.Device.ID, formatCounts(sum.Counts))
	switch {
	case sum.End == nil:
		fmt.Fprintln(&sb, "run did not finish (no end event): showing the trials recorded")
	case sum.End.Reason != "completed":
		fmt.Fprintf(&sb, "run ended: %s %s\n", sum.End.Reason, sum.End.Error)
	}
	if sum.End != nil && sum.End.Stop != "" {
		fmt.Fprintf(&sb, "stopped: %s\n", sum.End.Stop)
	}
	for _, l := range append(regimeLines.list, regimeLines.order...) {
		fmt.Fprintln(&sb, l)
	}
	fmt.Fprintln(&sb)
	switch {
	case suiteBody != "":
		sb.WriteString(suiteBody)
	case rep.HasComparison():
		sb.WriteString(rep.Table())
	default:
		fmt.Fprintln(&sb, nothingToCompare(sum.Counts))
	}
	io.WriteString(w, fitProse(sb.String(), width))
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
//
// For a suite (suite set) the order-effect tests are one line unless one
// fires: a test per benchmark metric would fill a screen before the table.
func regimeEvents(events []lab.Event, which string, opt analysis.Options, suite bool) ([]lab.Event, regimeReport, error) {
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
	if suite && len(lines) > 1 {
		rr.order = []string{fmt.Sprintf("order effect (the second run of a round against the first): tested on %d metrics, %d significant (Holm, alpha %g)%s",
			len(lines), len(warns), opt.Alpha, map[bool]string{true: ": see the warnings", false: ""}[len(warns) > 0])}
	}
	rr.warnings = append(rr.warnings, warns...)
	rr.warnings = append(rr.warnings, sessions.HostWarnings(rc.Events)...)
	rr.warnings = append(rr.warnings, sessions.TrialNotes(rc.Events)...)
	rr.warnings = append(rr.warnings, sessions.FailureNotes(rc.Events)...)
	return rc.Events, rr, nil
}
