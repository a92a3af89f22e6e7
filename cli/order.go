package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/plot"
	"github.com/perflab/perflab/sessions/study"
)

const orderUsage = `Usage: perflab order DEVICE --experiment EXP.json [--runs N] [--json]

OrderSage's order-dependence test (Algorithm 1): N repetitions of a
fixed-order run (all control, then all treatment) and a random-order run,
with the reset procedure between runs (on sim: a fresh device). Each build
and metric is a test: its per-run means in fixed order are compared with
those in random order by Kruskal–Wallis, with Bonferroni's correction
across tests. Order matters when any test's p is below α/tests.

For each test it shows the relative difference of means
Δ% = (mean fixed − mean random)/mean fixed, and the medians with their
distribution-free confidence intervals. A red flag marks a test whose
intervals do not overlap, or whose metric leads to a different A/B
conclusion in fixed order than in random order while the per-run
differences B/A differ between the orders (Mann–Whitney, p < α/metrics).
Each order's A/B conclusion takes the run as the unit: the per-run means
of control and treatment, paired by run.

Exit status: 0 order does not matter; 3 it does; 1 error.

Examples:
  perflab order sim:pixel --experiment example:sim-order-carryover
  perflab order sim:pixel --experiment example:sim-order-clean --runs 20 --json
  perflab order local --experiment example:local-aa --runs 5

Manual: docs/validate-order.md

Flags:
`

// cmdOrder runs the order-dependence test.
func cmdOrder(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("order", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf studyFlags
	sf.register(fs)
	runs := fs.Int("runs", study.DefaultOrderRuns, "N: repetitions of a fixed-order and a random-order run")
	alpha := fs.Float64("alpha", 0, "family-wise error rate (default: the experiment's alpha)")
	fs.Usage = func() { fmt.Fprint(stderr, orderUsage); fs.PrintDefaults() }
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	exp, devs, err := sf.load("order", pos, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "perflab order:", err)
		return loadCode(err)
	}
	defer sf.close()
	if *runs < 2 {
		fmt.Fprintf(stderr, "perflab order: --runs %d: want at least 2\n", *runs)
		return exitUsage
	}
	if err := lab.CheckRange("--runs", *runs, 2, lab.MaxStudyRuns); err != nil {
		fmt.Fprintln(stderr, "perflab order:", err)
		return exitUsage
	}
	if *alpha != 0 && !(*alpha > 0 && *alpha < 1) {
		fmt.Fprintf(stderr, "perflab order: --alpha %v: want a number between 0 and 1\n", *alpha)
		return exitUsage
	}
	fmt.Fprintf(stderr, "order %s: %d repetitions of a fixed-order and a random-order run, %d trials per arm (+%d warm-up)\n",
		exp.Device, *runs, exp.Trials, exp.Warmup)
	prog := newStudyProgress(stderr, sf.quiet)
	o, err := study.OrderStudy(ctx, study.OrderConfig{Experiment: exp, Devices: devs, Runs: *runs, Alpha: *alpha}, prog.add)
	prog.done()
	if o == nil {
		fmt.Fprintln(stderr, "perflab order:", err)
		return exitError
	}
	return sf.finish(studyOutput{
		cmd: "order", what: "repetitions", err: err, failed: o.OrderMatters,
		json: func(w io.Writer) error { return writeOrderJSON(w, o) },
		text: func(w io.Writer) { writeOrder(w, o) },
		plot: func() *plot.Figure { return plot.Order(o) },
	}, stdout, stderr)
}

// orderLine is the JSON contract of `perflab order --json`.
type orderLine struct {
	OrderMatters    bool            `json:"order_matters"`
	Alpha           float64         `json:"alpha"`
	AlphaBonferroni float64         `json:"alpha_bonferroni"`
	Tests           []orderLineTest `json:"tests"`
}

type orderLineTest struct {
	Name     string         `json:"name"`
	P        analysis.Float `json:"p"`
	DeltaPct analysis.Float `json:"delta_pct"`
	RedFlag  bool           `json:"red_flag"`
}

func writeOrderJSON(w io.Writer, o *study.Order) error {
	l := orderLine{OrderMatters: o.OrderMatters, Alpha: o.Alpha, AlphaBonferroni: o.AlphaBonferroni, Tests: []orderLineTest{}}
	for _, t := range o.Tests {
		l.Tests = append(l.Tests, orderLineTest{Name: t.Name, P: t.P, DeltaPct: t.DeltaPct, RedFlag: t.RedFlag})
	}
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func writeOrder(w io.Writer, o *study.Order) {
	fmt.Fprintf(w, "Order dependence on %s: %d repetitions, %d trials per arm, α = %g, Bonferroni α = %.3g over %d tests\n\n",
		o.Device, o.Runs, o.TrialsPerArm, o.Alpha, o.AlphaBonferroni, len(o.Tests))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "test\tp (KW)\tΔ% fixed−random\tmedian fixed [CI]\tmedian random [CI]\t")
	ci := func(iv analysis.Interval) string {
		return fmt.Sprintf("%s [%s, %s]", format.Num(iv.Point), format.Num(iv.Low), format.Num(iv.High))
	}
	for _, t := range o.Tests {
		mark := ""
		if t.Significant {
			mark = "order matters"
		}
		if t.RedFlag {
			mark = strings.TrimSpace(mark + " RED FLAG")
		}
		d := "–"
		if t.DeltaPct.Defined() {
			d = fmt.Sprintf("%+.2f%%", float64(t.DeltaPct))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, format.P(t.P, o.AlphaBonferroni), d, ci(t.Fixed), ci(t.Random), mark)
	}
	tw.Flush()
	if len(o.Conclusions) > 0 {
		fmt.Fprintln(w, "\nA/B conclusion by order (run-level, paired by run):")
		for _, c := range o.Conclusions {
			flag := ""
			switch {
			case c.RedFlag:
				flag = "  ← different conclusions, RED FLAG"
			case c.Fixed != c.Random:
				flag = "  ← different conclusions (per-run differences agree: a warning)"
			}
			fmt.Fprintf(w, "  %-20s fixed: %-12s (Δ %s)   random: %-12s (Δ %s)   p (Δ fixed vs random) %s%s\n", c.Metric, c.Fixed, format.SignedPct(c.DeltaPctFixed),
				c.Random, format.SignedPct(c.DeltaPctRandom), format.P(c.P, o.AlphaConclusions()), flag)
		}
	}
	fmt.Fprintln(w)
	for _, t := range o.Tests {
		for _, r := range t.Reasons {
			fmt.Fprintf(w, "%s: %s\n", t.Name, r)
		}
	}
	switch {
	case o.OrderMatters:
		fmt.Fprintln(w, "Order matters: the fixed and random orders give different results. Use random order (and a fuller reset procedure).")
	case o.Underpowered:
		fmt.Fprintln(w, "Inconclusive: too few repetitions for any test to reach significance.")
	default:
		fmt.Fprintln(w, "Order likely does not matter: no test differs between fixed and random order.")
	}
	for _, s := range o.Warnings {
		fmt.Fprintln(w, "warning:", s)
	}
}
