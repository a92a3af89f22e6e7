package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/perflab/perflab/examples"
	"io"
	"os"
	"strings"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/analysis/parse"
)

const compareUsage = `Usage: perflab compare [flags] A B [C ...]

Compares samples of A (control, known good) with B (treatment) and says,
per metric, whether B is a regression, an improvement, no change (within
a practical threshold) or inconclusive. With three or more
inputs every input is compared with A, the base, in benchstat's layout
(one column per input, a geomean row per unit shared by several metrics,
times scaled to ns/µs/ms/s; p-values corrected over every input × metric
as one family); --json then gives {"inputs", "family", "comparisons"
(one report per input after A), "geomeans", "median_ci",
"kruskal_wallis_all" (all inputs together, per metric)}.

Each input is a file, or - for standard input, holding one of:
  - plain numbers, one per line (blank lines and # comments ignored);
  - go test -bench output: every benchmark × unit is a metric, as in
    benchstat; rates (MB/s, .../s, MFLOPS) are higher-is-better, the rest
    (ns/op, B/op, allocs/op, ...) lower-is-better;
  - hyperfine --export-json files: each command's "times" is a sample.
    A single export holding several commands compares them in order.
Metrics present in some inputs but not others are listed, not dropped.

Statistics: median, mean, sd, CV per input; Δ of medians and means;
Hodges–Lehmann shift; Welch t-test; Mann–Whitney U (exact p when either input has ≤ 8 values,
without ties, as SciPy); percentile bootstrap CI of the median difference; Spearman
trend of values vs trial order; Holm/Bonferroni correction across metrics;
minimum detectable effect. Undefined statistics print as n/a (JSON null).

Verdict: a change is significant when the primary test's p-value (--test),
corrected across metrics (--correction), is below --alpha AND its interval
(bootstrap CI of the median difference for Mann–Whitney, Welch's CI of the
mean difference) excludes 0. A significant change at least as large as the
practical threshold is a regression or an improvement (by the metric's
direction); "no change" needs the whole interval within ±threshold (an
equivalence result, never with threshold 0); anything else, including a
significant change below the threshold and samples too small for the test
ever to reach --alpha after the correction across metrics, is inconclusive, with the estimate, interval, MDE
and about how many more trials per arm would decide.
In --json, kruskal_wallis is each metric's Kruskal–Wallis test of A
against B (with three or more inputs, of A against that comparison's
input); kruskal_wallis_all, all inputs tested together, is given only with
three or more inputs, at the top level, per metric.

Manual: docs/compare.md

Flags:
`

const compareExamples = `
Examples:
  perflab compare old.txt new.txt                 # one number per line
  go test -bench . -count 10 > new.bench
  perflab compare old.bench new.bench --test welch
  hyperfine --export-json run.json ./app-old ./app-new
  perflab compare run.json                        # A = ./app-old, B = ./app-new
  perflab compare fps-a.txt fps-b.txt --higher-is-better --json
  perflab compare a.txt b.txt --paired --threshold 1%   # line i of a with line i of b
  perflab compare example:compare/startup-a.txt example:compare/startup-b.txt --name startup --unit ms

Exit status: 0 when the comparison ran, whatever the verdicts (read them
from the table or --json); 1 when an input cannot be read or parsed; 2 for
invalid flags.
`

// cmdCompare implements `perflab compare`.
func cmdCompare(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runCompare(args, os.Stdin, stdout, stderr)
}

// compareFlags are the parsed command line of `perflab compare`.
type compareFlags struct {
	opt          analysis.Options
	higherBetter bool
	name, unit   string
	json         bool
	paired       bool
	inputs       []string
}

// parseCompareArgs parses flags, which may come before, between or after
// the inputs; "--" ends the flags.
func parseCompareArgs(args []string, stdout, stderr io.Writer) (*compareFlags, error) {
	c := &compareFlags{opt: analysis.DefaultOptions()}
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Float64Var(&c.opt.Alpha, "alpha", c.opt.Alpha, "significance level, after correction")
	fs.Float64Var(&c.opt.Confidence, "confidence", c.opt.Confidence, "level of confidence intervals")
	fs.StringVar(&c.opt.Correction, "correction", c.opt.Correction, "multiple-comparison correction across metrics: holm, bonferroni, bh (Benjamini–Hochberg: false discovery rate) or none")
	fs.StringVar(&c.opt.Test, "test", c.opt.Test, "primary test for the verdict: mann-whitney or welch")
	fs.IntVar(&c.opt.Resamples, "resamples", c.opt.Resamples, "bootstrap resamples")
	fs.Uint64Var(&c.opt.Seed, "seed", c.opt.Seed, "bootstrap random seed")
	fs.BoolVar(&c.higherBetter, "higher-is-better", false, "plain numbers: higher values are better (default: lower)")
	fs.StringVar(&c.name, "name", "", "plain numbers: metric name (default \"value\")")
	fs.StringVar(&c.unit, "unit", "", "plain numbers: unit shown in the table")
	fs.Var(percentFlag{&c.opt.ThresholdPct}, "threshold", "practical threshold, e.g. 2%: smaller significant changes are not regressions; \"no change\" needs the CI within ±threshold")
	fs.BoolVar(&c.paired, "paired", false, "pair line i of A with line i of B (same rounds) and analyse the per-pair log ratio (Wilcoxon signed-rank)")
	fs.BoolVar(&c.json, "json", false, "print the report as JSON (schema in analysis.Report; undefined statistics are null)")
	fs.Usage = func() {} // errors get a hint instead, --help the full text
	for {
		if err := parseFlags(fs, args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stdout, compareUsage)
				fs.SetOutput(stdout)
				fs.PrintDefaults()
				fmt.Fprint(stdout, compareExamples)
			}
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		// "--" makes the flag package stop; everything after is an input.
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			c.inputs = append(c.inputs, rest...)
			break
		}
		c.inputs = append(c.inputs, rest[0])
		args = rest[1:]
	}
	if err := c.opt.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// runCompare is cmdCompare with its standard input as a parameter.
func runCompare(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c, err := parseCompareArgs(args, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "perflab compare: %v\nRun 'perflab compare --help' for usage.\n", err)
		return 2
	}
	files, err := readCompareInputs(c, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "perflab compare: %v\n", err)
		return 1
	}
	if len(files) == 1 && len(files[0].Metrics) > 1 && files[0].Format == parse.FormatHyperfine {
		files = parse.SplitCommands(files[0])
	}
	if len(files) < 2 {
		fmt.Fprintf(stderr, "perflab compare: need at least two inputs (A and B), or one hyperfine export of two or more commands\nRun 'perflab compare --help' for usage.\n")
		return 2
	}
	metrics, notes := parse.Align(files)
	if c.paired {
		if err := pairInputs(metrics); err != nil {
			fmt.Fprintf(stderr, "perflab compare: %v\n", err)
			return 1
		}
	}
	for _, f := range files {
		c.opt.Labels = append(c.opt.Labels, f.Name)
	}
	var doc any
	var table string
	if len(files) > 2 {
		// Several builds: each against the base, benchstat's layout.
		v := analysis.CompareVersus(metrics, c.opt)
		v.Comparisons[0].Warnings = append(notes, v.Comparisons[0].Warnings...)
		doc, table = v, analysis.VersusTable(v)
	} else {
		r := analysis.Compare(metrics, c.opt)
		r.Warnings = append(notes, r.Warnings...)
		doc, table = r, analysis.Table(r)
	}
	if c.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			fmt.Fprintf(stderr, "perflab compare: %v\n", err)
			return 1
		}
		return 0
	}
	fmt.Fprint(stdout, table)
	return 0
}

// pairInputs pairs value i of A with value i of B (and of C, ... with
// three or more inputs) for every metric (--paired).
func pairInputs(metrics []analysis.MetricInput) error {
	for i := range metrics {
		m := &metrics[i]
		if len(m.Samples) < 2 {
			continue // reported as inconclusive with a warning
		}
		a := m.Samples[0]
		for j, b := range m.Samples[1:] {
			if len(a) != len(b) {
				return fmt.Errorf("--paired pairs value i of A with value i of %c, but metric %s has %d values in A and %d in %c",
					'B'+j, m.Name, len(a), len(b), 'B'+j)
			}
			var ps []analysis.Pair
			for k := range a {
				ps = append(ps, analysis.Pair{A: a[k], B: b[k]})
			}
			if j == 0 {
				m.Pairs = ps
			} else {
				m.MorePairs = append(m.MorePairs, ps)
				m.MoreDropped = append(m.MoreDropped, 0)
			}
		}
	}
	return nil
}

// readCompareInputs reads and parses every input; "-" is standard input
// and may appear once.
func readCompareInputs(c *compareFlags, stdin io.Reader) ([]*parse.File, error) {
	popt := parse.Options{Name: c.name, Unit: c.unit, HigherBetter: c.higherBetter}
	var files []*parse.File
	usedStdin := false
	for _, in := range c.inputs {
		var data []byte
		var err error
		name := in
		if in == "-" {
			if usedStdin {
				return nil, fmt.Errorf("standard input (-) can be given only once")
			}
			usedStdin = true
			name = "<stdin>"
			data, err = io.ReadAll(stdin)
		} else {
			data, err = examples.ReadFile(in)
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
		f, err := parse.Parse(name, data, popt)
		if err != nil {
			return nil, err
		}
		if f.Format != parse.FormatNumbers && (c.higherBetter || c.name != "" || c.unit != "") {
			return nil, fmt.Errorf("%s: --higher-is-better, --name and --unit apply to plain numbers only, but this is %s output", name, strings.ReplaceAll(f.Format, "-", " "))
		}
		if len(f.Metrics) == 0 {
			return nil, fmt.Errorf("%s: no benchmark results found", name)
		}
		files = append(files, f)
	}
	return files, nil
}
