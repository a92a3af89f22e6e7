package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/engine"
)

// runOverrides are the run flags that override an experiment's values.
type runOverrides struct {
	trials, warmup int
	order          string
	threshold      float64
	thresholdSet   bool
	stop           string
	maxTrials      int
	profile        bool
	profiler       string
	profileEvery   int
}

func (o *runOverrides) register(fs *flag.FlagSet) {
	fs.IntVar(&o.trials, "trials", 0, fmt.Sprintf("counted trials per arm (overrides the file; default %d, as in the workbench)", lab.DefaultTrials))
	fs.IntVar(&o.warmup, "warmup", -1, "warm-up rounds (overrides the file; default 1)")
	fs.StringVar(&o.order, "order", "", "fixed, alternate or random (overrides the file; default random)")
	fs.Func("threshold", "practical threshold, e.g. 2% or 0.5: a change whose CI lies within ±threshold is no change (overrides the file; default 0)", func(s string) error {
		if err := (percentFlag{&o.threshold}).Set(s); err != nil {
			return err
		}
		o.thresholdSet = true
		return nil
	})
	fs.StringVar(&o.stop, "stop", "", "fixed (run the trials) or auto (stop as soon as the sequential paired analysis, calibrated to --max-trials, decides; overrides the file; default fixed)")
	fs.IntVar(&o.maxTrials, "max-trials", 0, "with --stop auto: at most this many trials per arm (overrides the file; default: the trials)")
	fs.BoolVar(&o.profile, "profile", false, "collect a labelled CPU profile of every trial after the warm-up (perflab profile SESSION shows where the time went)")
	fs.IntVar(&o.profileEvery, "profile-every", 0, "profile one round in `K` (both arms; implies --profile): the verdicts come from the unprofiled rounds, perflab profile from the profiled ones")
	fs.StringVar(&o.profiler, "profiler", "", "on local: perf (perf record, default) or pprof (the program writes its Go CPU profile to $PERFLAB_CPUPROFILE)")
}

// set reports whether any override was given.
func (o *runOverrides) set() bool {
	return o.trials != 0 || o.warmup != -1 || o.order != "" || o.thresholdSet || o.stop != "" || o.maxTrials != 0 || o.profile || o.profiler != "" || o.profileEvery != 0
}

// apply writes the given overrides into exp and validates the result, so
// a bad value is refused before the first trial.
func (o *runOverrides) apply(exp *lab.Experiment) error {
	if o.trials != 0 {
		exp.Trials = o.trials
	}
	if o.warmup != -1 {
		exp.Warmup = o.warmup
	}
	if o.order != "" {
		exp.Order = o.order
	}
	if o.thresholdSet {
		exp.Threshold = o.threshold
	}
	if o.stop != "" {
		exp.Stop = o.stop
	}
	if o.maxTrials != 0 {
		exp.MaxTrials = o.maxTrials
	}
	if o.profile {
		exp.Profile = true
	}
	if o.profiler != "" {
		exp.Profiler = o.profiler
	}
	if o.profileEvery != 0 {
		exp.Profile, exp.ProfileEvery = true, o.profileEvery
	}
	if err := exp.Validate(); err != nil {
		return fmt.Errorf("%w (after the command-line flags)", err)
	}
	return nil
}

// commandExperiment is the experiment of `perflab run -- 'A' 'B' ['C'
// ...]`: shell commands on this host, the first the base (control), named
// by names (else by their text), with the experiment file's defaults. It
// goes through the file's parser (a list of builds) so both forms get the
// same defaults and checks.
func commandExperiment(commands, names []string) (*lab.Experiment, error) {
	var builds []lab.Build
	for i, cmd := range commands {
		if strings.TrimSpace(cmd) == "" {
			return nil, fmt.Errorf("command %d (%s) is empty", i+1, lab.ArmKeyAt(i, len(commands)))
		}
		name := cmd
		if i < len(names) {
			name = names[i]
		}
		builds = append(builds, lab.Build{Name: name, Command: []string{"sh", "-c", cmd}})
	}
	data, err := json.Marshal(map[string]any{"device": "local", "builds": builds})
	if err != nil {
		return nil, err
	}
	return lab.ParseExperiment(data)
}

// runExports are the files a headless run also writes its result to.
type runExports struct {
	json, csv, markdown string
}

func (e *runExports) register(fs *flag.FlagSet) {
	fs.StringVar(&e.json, "export-json", "", "also write the report (report --json schema) to `FILE`")
	fs.StringVar(&e.csv, "export-csv", "", "also write one row per trial and metric to `FILE`")
	fs.StringVar(&e.markdown, "export-markdown", "", "also write the comparison as a Markdown table to `FILE`")
}

func (e *runExports) set() bool { return e.json != "" || e.csv != "" || e.markdown != "" }

// write writes every requested export; the first error is returned, naming
// its file.
func (e *runExports) write(s *sessions.Session, rep engine.Analysis) error {
	for _, x := range []struct {
		path  string
		write func(io.Writer) error
	}{
		{e.json, func(w io.Writer) error { return writeSessionReport(w, s, rep) }},
		{e.csv, func(w io.Writer) error { return sessions.WriteCSV(w, s) }},
		{e.markdown, func(w io.Writer) error { _, err := io.WriteString(w, markdownOf(rep)); return err }},
	} {
		if x.path == "" {
			continue
		}
		f, err := os.Create(x.path)
		if err != nil {
			return err
		}
		err = x.write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", x.path, err)
		}
	}
	return nil
}

// markdownOf renders a session's comparison in Markdown: markdownTable,
// or markdownVersus for more than two builds.
func markdownOf(a engine.Analysis) string {
	if a.Versus != nil {
		return markdownVersus(*a.Versus)
	}
	return markdownTable(a.Report)
}

// markdownVersus renders every build against the base as a GitHub
// Markdown table, one row per metric and build after the base.
func markdownVersus(v analysis.Versus) string {
	label := func(i int) string {
		l := string(rune('A' + i))
		if i < len(v.Inputs) && v.Inputs[i] != l {
			l += ": " + strings.ReplaceAll(v.Inputs[i], "|", `\|`)
		}
		return l
	}
	var b strings.Builder
	if len(v.Comparisons) == 0 {
		return ""
	}
	fmt.Fprintf(&b, "| metric | unit | build | median | Δ vs %s | %g%% CI | p adj | n | verdict |\n",
		label(0), math.Round(v.Comparisons[0].Confidence*1000)/10)
	b.WriteString("|:---|:---|:---|---:|---:|:---:|---:|---:|:---|\n")
	for i, m := range v.Comparisons[0].Metrics {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | | | | %d | base |\n", m.Name, m.Unit, label(0), format.Text.Num(m.A.Median), m.A.N)
		for j, r := range v.Comparisons {
			mj := r.Metrics[i]
			ci := fmt.Sprintf("[%s, %s]", format.Text.SignedPct(mj.Decision.CILowPct), format.Text.SignedPct(mj.Decision.CIHighPct))
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %d | %s |\n", m.Name, m.Unit, label(j+1), format.Text.Num(mj.B.Median),
				format.Text.SignedPct(mj.Decision.DeltaPct), ci, format.Text.P(mj.PAdjusted, r.Alpha), mj.B.N, mj.Verdict)
		}
	}
	return b.String()
}

// markdownTable renders the comparison as a GitHub Markdown table, one
// row per metric, with the builds named in the header (as hyperfine's
// --export-markdown does for its commands).
func markdownTable(r analysis.Report) string {
	label := func(i int) string {
		if i < len(r.Inputs) {
			return strings.ReplaceAll(r.Inputs[i], "|", `\|`)
		}
		return string(rune('A' + i))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| metric | unit | A: %s median | B: %s median | Δ | %g%% CI | p adj | n A/B | verdict |\n",
		label(0), label(1), math.Round(r.Confidence*1000)/10)
	b.WriteString("|:---|:---|---:|---:|---:|:---:|---:|---:|:---|\n")
	for _, m := range r.Metrics {
		// Δ and its interval are the ones the verdict rests on (Decision).
		ci := fmt.Sprintf("[%s, %s]", format.Text.SignedPct(m.Decision.CILowPct), format.Text.SignedPct(m.Decision.CIHighPct))
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %d/%d | %s |\n", m.Name, m.Unit, format.Text.Num(m.A.Median), format.Text.Num(m.B.Median),
			format.Text.SignedPct(m.Decision.DeltaPct), ci, format.Text.P(m.PAdjusted, r.Alpha), m.A.N, m.B.N, m.Verdict)
	}
	return b.String()
}
